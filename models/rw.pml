/* SPDX-License-Identifier: BSL-1.0
 *
 * The read-write lock, as src/lock/acquire.cpp, src/lock/kind_rules.cpp (a majority for both
 * modes) and the rw scripts of src/protocol/script_table.cpp run it. On each node the lock is
 * one hash with an entry per reader, per writer and per waiting writer's intent, each with an
 * expiry on the node's clock. rw_acquire first drops the expired entries, then refuses a
 * reader while a live writer or a live intent is there; a writer records its intent when live
 * readers refuse it (if it asks for one and no other writer's intent is live), and is refused
 * while a live reader or another writer is there; a writer that is granted removes its own
 * intent. A client holds once QUORUM nodes granted within its validity (counted from the
 * attempt's start, less the drift allowance). A failed attempt is deleted on every node: a
 * writer's clean-up keeps its intent while it waits for its next attempt; a writer that gives
 * up (after its last attempt, which asks for no intent) or releases also withdraws its intent.
 * Extend renews a live entry only.
 *
 * Abstractions, as in mutex.pml: time is a discrete tick that every counter of remaining time
 * loses at once, and a node's clock may drop an entry or an intent up to DRIFT ticks early;
 * each (client, node) connection is a FIFO queue whose requests may wait any number of ticks,
 * be lost, or run with their reply lost (FAULTS in all), and a reply after the round was
 * decided is ignored; each script is one atomic step; a node may crash, losing its entries and
 * queued requests, and refuses requests for RESTART_DELAY ticks. Owner values are one per
 * client. Clients 0 to WRITERS - 1 write (one acquisition of up to TRIES attempts each), the
 * others read (ATTEMPTS attempts each). A writer waits any number of ticks between attempts,
 * so its intent may expire meanwhile, as when the retry delay outlasts it. The fencing counter
 * a writer may bump is left out (fencing.pml checks tokens).
 *
 * Properties: (1) while a writer believes it holds the lock within its validity, no other
 * client (reader or writer) does (asserted at every grant and extension); (2) a finished
 * acquisition, failed or released, leaves no entry or intent of its owner behind once its
 * requests have run, and a writer between attempts no entry, except where a delete was lost
 * (monitor); (3) a reader whose attempt began while writers' intents were live on a quorum of
 * nodes, and stayed live there until its decision, is not granted: once a waiting writer's
 * intent is on a quorum, no new reader gets in until the intents are withdrawn or expire
 * (asserted at every reader's grant).
 *
 * Mutants (each must be refuted):
 *   MUTANT_SMALL_QUORUM           a quorum one smaller than a majority
 *   MUTANT_RESTART_AT_ONCE        a crashed node answers again at once, without its entries
 *   MUTANT_NO_DRIFT               the validity does not subtract the drift allowance
 *   MUTANT_NO_CLEANUP             a failed attempt is not deleted
 *   MUTANT_READER_IGNORES_WRITER  a reader is refused by an intent only, not by a writer
 *   MUTANT_READER_IGNORES_INTENT  a reader is refused by a writer only, not by an intent
 *   MUTANT_WRITER_IGNORES_READERS a writer is refused by another writer only
 *   MUTANT_KEEP_INTENT            a writer's release and giving up leave its intent
 *   MUTANT_EXTEND_EXPIRED         extend writes the entry back also where it expired
 */

#ifndef NODES
#define NODES 3
#endif
#ifndef WRITERS
#define WRITERS 1
#endif
#ifndef READERS
#define READERS 1
#endif
#define CLIENTS (WRITERS + READERS)
#define IS_WRITER(c) ((c) < WRITERS)
#ifndef QUORUM
#ifdef MUTANT_SMALL_QUORUM
#define QUORUM (NODES / 2)
#else
#define QUORUM (NODES / 2 + 1)
#endif
#endif
/* The expiry of an entry and of an intent, and the largest early expiry, in ticks. The default
   clocks are exact (an entry and its holder's validity end at the next tick); -DEXPIRY=2
   -DDRIFT=1 lets a node drop an entry or an intent a tick early. */
#ifndef EXPIRY
#define EXPIRY 1
#endif
#ifndef INTENT
#define INTENT EXPIRY
#endif
#ifndef DRIFT
#define DRIFT 0
#endif
#ifdef MUTANT_NO_DRIFT
#define ALLOWANCE 0
#else
#define ALLOWANCE DRIFT
#endif
#ifndef RESTART_DELAY
#ifdef MUTANT_RESTART_AT_ONCE
#define RESTART_DELAY 0
#else
#define RESTART_DELAY EXPIRY
#endif
#endif
/* Faults in one run, at most: node crashes, lost requests and lost replies. */
#ifndef FAULTS
#define FAULTS 0
#endif
/* A writer's attempts in its one acquisition (all but the last ask for an intent), and each
   reader's attempts. By default a reader may come back after a writer recorded its intent,
   which is what (3) is about. */
#ifndef TRIES
#define TRIES 2
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 2
#endif
byte att[CLIENTS];
/* Extensions: off by default; -DEXTEND=1 adds them. */
#ifndef EXTEND
#define EXTEND 0
#endif
#ifndef QCAP
#define QCAP 2
#endif

/* Symmetry: readers are alike, writers are alike, and so are the nodes, so the model only
   explores the runs in which a reader (a writer) makes its first attempt after the reader
   (the writer) numbered before it, and node n + 1 runs its first request (or loses it, or
   crashes) after node n: every run is one of these with the clients and the nodes numbered
   in that order. */
#define FIRST_OK(c) ((c) == 0 || (c) == WRITERS || att[(c) - 1] > 0)
bit touched[NODES];

#define IDX(c, n) ((c) * NODES + (n))
#define LEN(c, n) ((n) < NODES -> len(q[IDX(c, n)]) : 0)
#define ROOM(c, k) (LEN(c, 0) <= QCAP - (k) && LEN(c, 1) <= QCAP - (k) && LEN(c, 2) <= QCAP - (k) && \
                    LEN(c, 3) <= QCAP - (k) && LEN(c, 4) <= QCAP - (k) && LEN(c, 5) <= QCAP - (k) && \
                    LEN(c, 6) <= QCAP - (k))

/* ACQ an attempt without intent, ACQI a writer's attempt that asks for one, DEL the clean-up
   or a reader's release (the entry goes), DELI a writer's release or giving up (the entry and
   the intent go), EXT an extension. */
mtype = { ACQ, ACQI, DEL, DELI, EXT };
chan q[CLIENTS * NODES] = [QCAP] of { mtype };

/* Client c's entry on node n (a reader's or a writer's, by c): ticks left, 0 when none. */
byte ent[CLIENTS * NODES];
/* Writer w's intent on node n: ticks left, 0 when none. */
byte itt[WRITERS * NODES];
byte down[NODES];
byte faults;

#define AWAITED 1
#define GRANTED 2
#define REFUSED 3
byte reply[CLIENTS * NODES];
bit orphan_ok[CLIENTS * NODES];

#define IDLE 0
#define ATTEMPT 1
#define HOLD 2
#define EXTENDING 3
#define PAUSE 4   /* a writer between attempts */
byte phase[CLIENTS];
byte valid[CLIENTS];
byte ext_valid[CLIENTS];

#define IS(c, n, v) ((n) < NODES -> (reply[IDX(c, n)] == (v) -> 1 : 0) : 0)
#define COUNT(c, v) (IS(c, 0, v) + IS(c, 1, v) + IS(c, 2, v) + IS(c, 3, v) + IS(c, 4, v) + \
                     IS(c, 5, v) + IS(c, 6, v))
#define DECIDED(c) (COUNT(c, GRANTED) >= QUORUM || COUNT(c, AWAITED) == 0 || overdue[c])
bit overdue[CLIENTS];

/* Believers (up to 4 clients). */
#define BELIEVES(d) ((d) < CLIENTS && (phase[d] == HOLD || phase[d] == EXTENDING) && valid[d] > 0)
#define WB(d) ((IS_WRITER(d) && BELIEVES(d)) -> 1 : 0)
#define RB(d) ((!IS_WRITER(d) && BELIEVES(d)) -> 1 : 0)
#define WRITING (WB(0) + WB(1) + WB(2) + WB(3))
#define READING (RB(0) + RB(1) + RB(2) + RB(3))

/* (1), once client c counts among the believers. */
inline writer_alone()
{
    assert(WRITING == 0 || WRITING + READING == 1)
}

/* Node n's live entries (up to 4 clients, 2 writers). */
#define LIVE(d, n) (((d) < CLIENTS && ent[IDX(d, n)] > 0) -> 1 : 0)
#define READERS_ON(n) ((IS_WRITER(0) -> 0 : LIVE(0, n)) + (IS_WRITER(1) -> 0 : LIVE(1, n)) + \
                       (IS_WRITER(2) -> 0 : LIVE(2, n)) + (IS_WRITER(3) -> 0 : LIVE(3, n)))
#define OTHER_WRITER(c, n) (((c) != 0 && IS_WRITER(0) && LIVE(0, n)) || \
                            ((c) != 1 && IS_WRITER(1) && LIVE(1, n)))
#define HAS_INTENT(w, n) (((w) < WRITERS && itt[IDX(w, n)] > 0) -> 1 : 0)
#define INTENT_ON(n) (HAS_INTENT(0, n) + HAS_INTENT(1, n) > 0)
#define OTHER_INTENT(c, n) (((c) != 0 && HAS_INTENT(0, n)) || ((c) != 1 && HAS_INTENT(1, n)))

/* (3): blocked[IDX(r, n)] while an intent has been live on node n without a gap since reader
   r's attempt began. */
bit blocked[CLIENTS * NODES];
#define BLK(c, n) ((n) < NODES -> blocked[IDX(c, n)] : 0)
#define BLOCKED(c) (BLK(c, 0) + BLK(c, 1) + BLK(c, 2) + BLK(c, 3) + BLK(c, 4) + BLK(c, 5) + \
                    BLK(c, 6))

/* Node n's intents may have gone: the readers' blocks there end. */
inline intents_changed(n)
{
    if
    :: !INTENT_ON(n) ->
        e = WRITERS;
        do
        :: e < CLIENTS -> blocked[IDX(e, n)] = 0; e++
        :: e >= CLIENTS -> break
        od;
        e = 0
    :: else
    fi
}

inline drop_entry(c, n)
{
    ent[IDX(c, n)] = 0;
    if
    :: !IS_WRITER(c) || itt[IDX(c, n)] == 0 -> orphan_ok[IDX(c, n)] = 0
    :: else
    fi
}

inline drop_intent(w, n)
{
    itt[IDX(w, n)] = 0;
    if
    :: ent[IDX(w, n)] == 0 -> orphan_ok[IDX(w, n)] = 0
    :: else
    fi
}

inline count_replies(c)
{
    ok = 0;
    n = 0;
    do
    :: n < NODES ->
        if
        :: reply[IDX(c, n)] == GRANTED -> ok++
        :: else
        fi;
        n++
    :: n >= NODES -> break
    od;
    n = 0
}

inline clear_replies(c)
{
    n = 0;
    do
    :: n < NODES -> reply[IDX(c, n)] = 0; n++
    :: n >= NODES -> break
    od;
    n = 0
}

inline send_all(c, op)
{
    n = 0;
    do
    :: n < NODES -> q[IDX(c, n)]!op; reply[IDX(c, n)] = AWAITED; n++
    :: n >= NODES -> break
    od;
    n = 0
}

inline send_only(c, op)
{
    n = 0;
    do
    :: n < NODES -> q[IDX(c, n)]!op; n++
    :: n >= NODES -> break
    od;
    n = 0
}

/* The clean-up between attempts: not where the attempt was refused, which wrote nothing
 * there but a writer's intent, which the clean-up keeps anyway. */
inline send_unrefused(c, op)
{
    n = 0;
    do
    :: n < NODES ->
        if
        :: reply[IDX(c, n)] != REFUSED -> q[IDX(c, n)]!op
        :: else
        fi;
        n++
    :: n >= NODES -> break
    od;
    n = 0
}

proctype client(byte c)
{
    byte n, ok;
    do
    :: d_step {   /* an attempt: a reader's, or a writer's first or next */
        ((phase[c] == IDLE && att[c] == 0 && FIRST_OK(c)) ||
         (phase[c] == IDLE && !IS_WRITER(c) && att[c] > 0 && att[c] < ATTEMPTS) ||
         (phase[c] == PAUSE)) && ROOM(c, 2) ->
        att[c]++;
        valid[c] = EXPIRY - ALLOWANCE;
        if
        :: IS_WRITER(c) && att[c] < TRIES -> send_all(c, ACQI)
        :: else -> send_all(c, ACQ)
        fi;
        if
        :: !IS_WRITER(c) ->
            n = 0;
            do
            :: n < NODES -> blocked[IDX(c, n)] = INTENT_ON(n); n++
            :: n >= NODES -> break
            od;
            n = 0
        :: else
        fi;
        phase[c] = ATTEMPT
    }
    :: d_step {
        phase[c] == ATTEMPT && DECIDED(c) ->
        overdue[c] = 0;
        count_replies(c);
        if
        :: ok >= QUORUM && valid[c] > 0 ->
            phase[c] = HOLD;
            writer_alone();
            assert(IS_WRITER(c) || BLOCKED(c) < QUORUM);   /* (3) */
            clear_replies(c)
        :: else ->
            valid[c] = 0;
            if
            :: IS_WRITER(c) && att[c] < TRIES -> phase[c] = PAUSE
            :: else -> phase[c] = IDLE
            fi;
#ifndef MUTANT_NO_CLEANUP
            if
            :: IS_WRITER(c) && phase[c] == IDLE -> send_only(c, DELI)   /* gives up */
            :: else -> send_unrefused(c, DEL)
            fi;
#endif
            clear_replies(c)
        fi;
        n = 0;
        do
        :: n < NODES -> blocked[IDX(c, n)] = 0; n++
        :: n >= NODES -> break
        od;
        n = 0;
        ok = 0
    }
    :: d_step {
        EXTEND && phase[c] == HOLD && valid[c] > 0 && ROOM(c, 1) ->
        ext_valid[c] = EXPIRY - ALLOWANCE;
        send_all(c, EXT);
        phase[c] = EXTENDING
    }
    :: d_step {
        phase[c] == EXTENDING && DECIDED(c) ->
        overdue[c] = 0;
        count_replies(c);
        clear_replies(c);
        phase[c] = HOLD;
        if
        :: ok >= QUORUM && ext_valid[c] > 0 ->
            valid[c] = ext_valid[c];
            writer_alone()
        :: else
        fi;
        ext_valid[c] = 0;
        ok = 0
    }
    :: d_step {
        phase[c] == HOLD && ROOM(c, 1) ->
        valid[c] = 0;
        if
        :: IS_WRITER(c) -> send_only(c, DELI)
        :: else -> send_only(c, DEL)
        fi;
        phase[c] = IDLE
    }
    od
}

/* rw_acquire, rw_release and rw_check_extend on node n for client c. */
inline serve(c, n)
{
    if
    :: down[n] > 0 -> answer = 0
    :: else ->
        if
        :: (op == ACQ || op == ACQI) && !IS_WRITER(c) ->
            if
#if defined(MUTANT_READER_IGNORES_WRITER)
            :: INTENT_ON(n) -> answer = REFUSED
#elif defined(MUTANT_READER_IGNORES_INTENT)
            :: OTHER_WRITER(c, n) -> answer = REFUSED
#else
            :: OTHER_WRITER(c, n) || INTENT_ON(n) -> answer = REFUSED
#endif
            :: else -> ent[IDX(c, n)] = EXPIRY; answer = GRANTED
            fi
        :: (op == ACQ || op == ACQI) && IS_WRITER(c) ->
            if
            :: op == ACQI && READERS_ON(n) > 0 && !OTHER_INTENT(c, n) -> itt[IDX(c, n)] = INTENT
            :: else
            fi;
            if
#ifdef MUTANT_WRITER_IGNORES_READERS
            :: OTHER_WRITER(c, n) -> answer = REFUSED
#else
            :: READERS_ON(n) > 0 || OTHER_WRITER(c, n) -> answer = REFUSED
#endif
            :: else ->
                drop_intent(c, n);
                intents_changed(n);
                ent[IDX(c, n)] = EXPIRY;
                answer = GRANTED
            fi
        :: op == EXT ->
            if
#ifdef MUTANT_EXTEND_EXPIRED
            :: true -> ent[IDX(c, n)] = EXPIRY; answer = GRANTED
#else
            :: ent[IDX(c, n)] > 0 -> ent[IDX(c, n)] = EXPIRY; answer = GRANTED
            :: else -> answer = REFUSED
#endif
            fi
        :: op == DEL ->
            drop_entry(c, n);
            answer = GRANTED
        :: op == DELI ->
            drop_entry(c, n);
#ifndef MUTANT_KEEP_INTENT
            drop_intent(c, n);
            intents_changed(n);
#endif
            answer = GRANTED
        fi
    fi
}

#define CURRENT(c, n) (len(q[IDX(c, n)]) == 0 && reply[IDX(c, n)] == AWAITED)

proctype link(byte c; byte n)
{
    mtype op;
    byte answer, e;
    do
    :: d_step {
        len(q[IDX(c, n)]) > 0 && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        q[IDX(c, n)]?op;
        serve(c, n);
        if
        :: answer != 0 && CURRENT(c, n) -> reply[IDX(c, n)] = answer
        :: else
        fi;
        op = 0;
        answer = 0
    }
    :: d_step {   /* the request runs, its reply is lost */
        len(q[IDX(c, n)]) > 0 && faults < FAULTS && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        faults++;
        q[IDX(c, n)]?op;
        serve(c, n);
        op = 0;
        answer = 0
    }
    :: d_step {   /* the request is lost */
        len(q[IDX(c, n)]) > 0 && faults < FAULTS && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        faults++;
        q[IDX(c, n)]?op;
        if
        :: (op == DEL || op == DELI) && (ent[IDX(c, n)] > 0 ||
                                         (IS_WRITER(c) && itt[IDX(c, n)] > 0)) ->
            orphan_ok[IDX(c, n)] = 1
        :: else
        fi;
        op = 0
    }
    od
}

/* A node's own events: an entry or an intent dropped early by a fast clock, a crash. */
#define EARLY(d, n) ((d) < CLIENTS && ent[IDX(d, n)] > 0 && ent[IDX(d, n)] <= DRIFT)
#define EARLY_I(w, n) ((w) < WRITERS && itt[IDX(w, n)] > 0 && itt[IDX(w, n)] <= DRIFT)
proctype node(byte n)
{
    byte c, e;
    do
    :: d_step { EARLY(0, n) -> drop_entry(0, n) }
    :: d_step { EARLY(1, n) -> drop_entry(1, n) }
    :: d_step { EARLY(2, n) -> drop_entry(2, n) }
    :: d_step { EARLY(3, n) -> drop_entry(3, n) }
    :: d_step { EARLY_I(0, n) -> drop_intent(0, n); intents_changed(n) }
    :: d_step { EARLY_I(1, n) -> drop_intent(1, n); intents_changed(n) }
    :: d_step {
        faults < FAULTS && down[n] == 0 && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        faults++;
        c = 0;
        do
        :: c < CLIENTS ->
            drop_entry(c, n);
            if
            :: IS_WRITER(c) -> drop_intent(c, n)
            :: else
            fi;
            do
            :: nempty(q[IDX(c, n)]) -> q[IDX(c, n)]?_
            :: empty(q[IDX(c, n)]) -> break
            od;
            c++
        :: c >= CLIENTS -> break
        od;
        c = 0;
        intents_changed(n);
        down[n] = RESTART_DELAY
    }
    od
}

active proctype clock()
{
    byte i, e;
    do
    :: d_step {
        i = 0;
        do
        :: i < CLIENTS ->
            if
            :: valid[i] > 0 -> valid[i]--
            :: else
            fi;
            if
            :: ext_valid[i] > 0 -> ext_valid[i]--
            :: else
            fi;
            overdue[i] = (phase[i] == ATTEMPT || phase[i] == EXTENDING);
            i++
        :: i >= CLIENTS -> break
        od;
        i = 0;
        do
        :: i < CLIENTS * NODES ->
            if
            :: ent[i] > 0 ->
                ent[i]--;
                if
                :: ent[i] == 0 && (i >= WRITERS * NODES || itt[i] == 0) -> orphan_ok[i] = 0
                :: else
                fi
            :: else
            fi;
            i++
        :: i >= CLIENTS * NODES -> break
        od;
        i = 0;
        do
        :: i < WRITERS * NODES ->
            if
            :: itt[i] > 0 ->
                itt[i]--;
                if
                :: itt[i] == 0 && ent[i] == 0 -> orphan_ok[i] = 0
                :: else
                fi
            :: else
            fi;
            i++
        :: i >= WRITERS * NODES -> break
        od;
        i = 0;
        do
        :: i < NODES ->
            intents_changed(i);
            if
            :: down[i] > 0 -> down[i]--
            :: else
            fi;
            i++
        :: i >= NODES -> break
        od;
        i = 0
    }
    od
}

/* (2): a finished acquisition leaves nothing, a writer between attempts no entry, on a node
   with nothing of the owner's queued, unless a delete was lost there. */
active proctype no_orphans()
{
    byte c, n;
    do
    :: d_step {
        c = 0;
        do
        :: c < CLIENTS ->
            n = 0;
            do
            :: n < NODES ->
                assert(!(len(q[IDX(c, n)]) == 0 && !orphan_ok[IDX(c, n)] &&
                         (((phase[c] == IDLE || phase[c] == PAUSE) && ent[IDX(c, n)] > 0) ||
                          (phase[c] == IDLE && IS_WRITER(c) && itt[IDX(c, n)] > 0))));
                n++
            :: n >= NODES -> break
            od;
            c++
        :: c >= CLIENTS -> break
        od;
        c = 0;
        n = 0
    }
    od
}

init
{
    byte c, n;
    atomic {
        c = 0;
        do
        :: c < CLIENTS ->
            run client(c);
            n = 0;
            do
            :: n < NODES -> run link(c, n); n++
            :: n >= NODES -> break
            od;
            c++
        :: c >= CLIENTS -> break
        od;
        n = 0;
        do
        :: n < NODES -> run node(n); n++
        :: n >= NODES -> break
        od;
        c = 0;
        n = 0
    }
}
