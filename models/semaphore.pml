/* SPDX-License-Identifier: BSL-1.0
 *
 * The semaphore, as src/lock/acquire.cpp, src/lock/kind_rules.cpp (its quorum) and the
 * semaphore scripts of src/protocol/script_table.cpp run it: a permit is an entry of its own on
 * each node (the holder's owner value with an expiry on the node's clock); a node first drops
 * the entries that expired, then grants a permit only while fewer than PERMITS live entries
 * are there, or when the entry is already the client's (a retried request); a client holds a
 * permit once QUORUM = floor(NODES * PERMITS / (PERMITS + 1)) + 1 nodes granted it within its
 * validity (counted from the attempt's start, less the drift allowance); a failed attempt is
 * deleted on every node; extend renews the entry only where it is still live; release deletes
 * the client's own entry.
 *
 * Abstractions, as in mutex.pml: time is a discrete tick that every counter of remaining time
 * loses at once, and a node's clock may drop an entry up to DRIFT ticks early; each (client,
 * node) connection is a FIFO queue whose requests may wait any number of ticks, be lost, or run
 * with their reply lost (FAULTS in all), and a reply after the round was decided is ignored;
 * each script is one atomic step; a node may crash, losing its entries and queued requests,
 * and refuses requests for RESTART_DELAY ticks. Owner values are one per client (one
 * acquisition's attempts share one in the library, and one client's acquisitions follow each
 * other on FIFO connections). The limit key (a client asking with another limit is refused)
 * is left out: every client here uses PERMITS. Each client makes at most ATTEMPTS attempts.
 *
 * Properties: (1) never more than PERMITS clients believe they hold a permit within their
 * validity (asserted at every grant and extension, the only steps that add a believer);
 * (2) a failed attempt or a release leaves no entry of its owner behind once its requests have
 * run, except where a delete was lost (monitor).
 *
 * Mutants (each must be refuted):
 *   MUTANT_MAJORITY         a majority per permit, as a mutex (below Q for PERMITS >= 2, N = 3)
 *   MUTANT_SMALL_QUORUM     a quorum one smaller than the library's
 *   MUTANT_RESTART_AT_ONCE  a crashed node answers again at once, without its entries
 *   MUTANT_NO_CLEANUP       a failed attempt is not deleted
 *   MUTANT_CLEANUP_GRANTED  the clean-up goes only to the nodes that said they granted
 *   MUTANT_LIMIT_PLUS_ONE   a node grants while its live entries are at most PERMITS (one
 *                           entry too few counted)
 *   MUTANT_NO_DRIFT         the validity does not subtract the drift allowance
 *   MUTANT_VALIDITY_FROM_REPLY the validity counts from the round's end, not its start
 *   MUTANT_RELEASE_ANY      a delete where the client has no live entry frees another
 *                           client's (as the decrement of a counting semaphore would)
 *   MUTANT_EXTEND_EXPIRED   extend writes the entry back also where it expired
 */

#ifndef NODES
#define NODES 3
#endif
#ifndef PERMITS
#define PERMITS 2
#endif
#ifndef CLIENTS
#define CLIENTS (PERMITS + 1)
#endif
#ifndef QUORUM
#if defined(MUTANT_MAJORITY)
#define QUORUM (NODES / 2 + 1)
#elif defined(MUTANT_SMALL_QUORUM)
#define QUORUM (NODES * PERMITS / (PERMITS + 1))
#else
#define QUORUM (NODES * PERMITS / (PERMITS + 1) + 1)
#endif
#endif
#ifdef MUTANT_LIMIT_PLUS_ONE
#define LIMIT (PERMITS + 1)
#else
#define LIMIT PERMITS
#endif
/* The expiry and the largest early expiry of an entry on a node, in ticks. The default clocks
   are exact: an entry and its holder's validity both end at the next tick. -DEXPIRY=2 -DDRIFT=1
   (the mutex model's setting) lets a node drop an entry a tick early, and the client count on
   a validity one tick shorter; with three clients that takes ten times the states. */
#ifndef EXPIRY
#define EXPIRY 1
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
/* Faults in one run, at most: node crashes, lost requests and lost replies (-DFAULTS=1 adds
   one fault of any kind at any moment). */
#ifndef FAULTS
#define FAULTS 0
#endif
/* Attempts of each client in one run: one each lets PERMITS + 1 clients all try at once, which
   is what the quorum must withstand; 0 for no bound. */
#ifndef ATTEMPTS
#define ATTEMPTS 1
#endif
byte att[CLIENTS];
/* Symmetry: the clients are alike, and so are the nodes, so the model only explores the runs
   in which client c + 1 makes its first attempt after client c, and node n + 1 runs its first
   request (or loses it, or crashes) after node n: every run is one of these with the clients
   and the nodes numbered in that order. */
/* Extensions: off by default; -DEXTEND=1 adds them. */
#ifndef EXTEND
#define EXTEND 0
#endif
/* Requests a connection holds at most; a client waits for room before it sends. */
#ifndef QCAP
#define QCAP 2
#endif

#define IDX(c, n) ((c) * NODES + (n))
/* Room for k more requests on each of client c's connections (up to 7 nodes). */
#define LEN(c, n) ((n) < NODES -> len(q[IDX(c, n)]) : 0)
#define ROOM(c, k) (LEN(c, 0) <= QCAP - (k) && LEN(c, 1) <= QCAP - (k) && LEN(c, 2) <= QCAP - (k) && \
                    LEN(c, 3) <= QCAP - (k) && LEN(c, 4) <= QCAP - (k) && LEN(c, 5) <= QCAP - (k) && \
                    LEN(c, 6) <= QCAP - (k))

mtype = { ACQ, DEL, EXT };
/* Requests in flight. */
chan q[CLIENTS * NODES] = [QCAP] of { mtype };

/* Client c's entry on node n: the ticks left of its expiry, 0 when there is none. */
byte ent[CLIENTS * NODES];
byte down[NODES];
bit touched[NODES];   /* the node ran, lost or dropped a request: see Symmetry */
byte faults;

/* Replies: 0 not awaited, else awaited, granted or refused. */
#define AWAITED 1
#define GRANTED 2
#define REFUSED 3
byte reply[CLIENTS * NODES];
/* The owner's entry on a node was left by a delete that was lost: no clean-up can reach it. */
bit orphan_ok[CLIENTS * NODES];

#define IDLE 0
#define ATTEMPT 1
#define HOLD 2
#define EXTENDING 3
byte phase[CLIENTS];
byte valid[CLIENTS];    /* ticks of validity left */
byte ext_valid[CLIENTS];

/* A round ends once a quorum granted, every awaited node answered, or its deadline (one tick)
   passed. */
#define IS(c, n, v) ((n) < NODES -> (reply[IDX(c, n)] == (v) -> 1 : 0) : 0)
#define COUNT(c, v) (IS(c, 0, v) + IS(c, 1, v) + IS(c, 2, v) + IS(c, 3, v) + IS(c, 4, v) + \
                     IS(c, 5, v) + IS(c, 6, v))
#define DECIDED(c) (COUNT(c, GRANTED) >= QUORUM || COUNT(c, AWAITED) == 0 || overdue[c])
bit overdue[CLIENTS];

#define BELIEVES(d) ((phase[d] == HOLD || phase[d] == EXTENDING) && valid[d] > 0)
#define HOLDS(d) (((d) < CLIENTS && BELIEVES(d)) -> 1 : 0)
#define HOLDERS (HOLDS(0) + HOLDS(1) + HOLDS(2) + HOLDS(3) + HOLDS(4) + HOLDS(5))

/* (1), once client c counts among the believers. */
inline at_most_permits()
{
    assert(HOLDERS <= PERMITS)
}

inline drop_entry(c, n)
{
    ent[IDX(c, n)] = 0;
    orphan_ok[IDX(c, n)] = 0
}

/* Live entries on node n (up to 6 clients). */
#define LIVE(d, n) (((d) < CLIENTS && ent[IDX(d, n)] > 0) -> 1 : 0)
#define ENTRIES(n) (LIVE(0, n) + LIVE(1, n) + LIVE(2, n) + LIVE(3, n) + LIVE(4, n) + LIVE(5, n))

/* Counts client c's granted replies and stops awaiting the others. */
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

proctype client(byte c)
{
    byte n, ok, d;
    do
    :: d_step {
        phase[c] == IDLE && (ATTEMPTS == 0 || att[c] < ATTEMPTS) && ROOM(c, 2) &&
        (c == 0 || att[c - 1] > 0) ->
        if
        :: ATTEMPTS > 0 -> att[c]++
        :: else -> att[c] = 1
        fi;
        valid[c] = EXPIRY - ALLOWANCE;   /* from the attempt's start */
        send_all(c, ACQ);
        phase[c] = ATTEMPT
    }
    :: d_step {
        phase[c] == ATTEMPT && DECIDED(c) ->   /* the replies so far count */
        overdue[c] = 0;
#ifdef MUTANT_VALIDITY_FROM_REPLY
        valid[c] = EXPIRY - ALLOWANCE;
#endif
        count_replies(c);
        if
        :: ok >= QUORUM && valid[c] > 0 ->
            phase[c] = HOLD;
            at_most_permits();
            clear_replies(c)
        :: else ->
            valid[c] = 0;
            phase[c] = IDLE;
#ifndef MUTANT_NO_CLEANUP
            n = 0;
            do
            :: n < NODES ->
#ifdef MUTANT_CLEANUP_GRANTED
                if
                :: reply[IDX(c, n)] == GRANTED -> q[IDX(c, n)]!DEL
                :: else
                fi;
#else
                /* Not where the attempt was refused: a full node wrote nothing. */
                if
                :: reply[IDX(c, n)] != REFUSED -> q[IDX(c, n)]!DEL
                :: else
                fi;
#endif
                n++
            :: n >= NODES -> break
            od;
            n = 0;
#endif
            clear_replies(c)
        fi;
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
        if
        :: ok >= QUORUM && ext_valid[c] > 0 ->
            valid[c] = ext_valid[c];
            phase[c] = HOLD;
            at_most_permits()
        :: else   /* the old validity stands */
        fi;
        ext_valid[c] = 0;
        ok = 0;
        phase[c] = HOLD
    }
    :: d_step {
        phase[c] == HOLD && ROOM(c, 1) ->
        valid[c] = 0;
        send_all(c, DEL);
        clear_replies(c);
        phase[c] = IDLE
    }
    od
}

/* Client c's connection to node n: runs each request as one atomic step, in order. */
inline serve(c, n)
{
    if
    :: down[n] > 0 -> answer = 0   /* refused: the node is down */
    :: else ->
        if
        :: op == ACQ ->
            if
            :: ent[IDX(c, n)] > 0 || ENTRIES(n) < LIMIT -> ent[IDX(c, n)] = EXPIRY; answer = GRANTED
            :: else -> answer = REFUSED
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
#ifdef MUTANT_RELEASE_ANY
            /* without an entry of its own here, the first live one, whoever's */
            if
            :: ent[IDX(c, n)] > 0 -> drop_entry(c, n)
            :: else ->
                d = 0;
                do
                :: d < CLIENTS && ent[IDX(d, n)] > 0 -> drop_entry(d, n); break
                :: d < CLIENTS && ent[IDX(d, n)] == 0 -> d++
                :: d >= CLIENTS -> break
                od;
                d = 0
            fi;
#else
            drop_entry(c, n);
#endif
            answer = GRANTED
        fi
    fi
}

/* A reply counts only if it answers the client's current round (the last request queued). */
#define CURRENT(c, n) (len(q[IDX(c, n)]) == 0 && reply[IDX(c, n)] == AWAITED)

proctype link(byte c; byte n)
{
    mtype op;
    byte answer, d;
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
        :: op == DEL && ent[IDX(c, n)] > 0 -> orphan_ok[IDX(c, n)] = 1
        :: else
        fi;
        op = 0
    }
    od
}

/* A node's own events: an entry dropped early by a fast clock (any one of them), a crash. */
#define EARLY(d, n) ((d) < CLIENTS && ent[IDX(d, n)] > 0 && ent[IDX(d, n)] <= DRIFT)
proctype node(byte n)
{
    byte c;
    do
    :: d_step { EARLY(0, n) -> drop_entry(0, n) }
    :: d_step { EARLY(1, n) -> drop_entry(1, n) }
    :: d_step { EARLY(2, n) -> drop_entry(2, n) }
    :: d_step { EARLY(3, n) -> drop_entry(3, n) }
    :: d_step { EARLY(4, n) -> drop_entry(4, n) }
    :: d_step { EARLY(5, n) -> drop_entry(5, n) }
    :: d_step {
        faults < FAULTS && down[n] == 0 && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        faults++;
        c = 0;
        do
        :: c < CLIENTS ->
            drop_entry(c, n);
            do
            :: nempty(q[IDX(c, n)]) -> q[IDX(c, n)]?_
            :: empty(q[IDX(c, n)]) -> break
            od;
            c++
        :: c >= CLIENTS -> break
        od;
        c = 0;
        down[n] = RESTART_DELAY
    }
    od
}

active proctype clock()
{
    byte i;
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
                :: ent[i] == 0 -> orphan_ok[i] = 0
                :: else
                fi
            :: else
            fi;
            i++
        :: i >= CLIENTS * NODES -> break
        od;
        i = 0;
        do
        :: i < NODES ->
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

/* (2): an idle client's entry on a node with nothing of it queued was left by a lost delete. */
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
                assert(!(phase[c] == IDLE && ent[IDX(c, n)] > 0 && len(q[IDX(c, n)]) == 0 &&
                         !orphan_ok[IDX(c, n)]));
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
