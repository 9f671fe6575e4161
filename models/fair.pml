/* SPDX-License-Identifier: BSL-1.0
 *
 * The fair lock, as the fair_join, fair_acquire and fair_release scripts of
 * src/protocol/script_table.cpp and the fair acquire of src/lock/acquire.cpp
 * (acquire_fsm, fair_queue_fsm, hand_off_tally) run it. Each node keeps the lock key and,
 * beside it, a queue of entries (pending with a proposal, or committed with a ticket, with
 * an expiry and, for a committed entry that a release may hand the key to, a stamp) and a
 * ticket counter. A waiter joins (every node proposes its counter + 1), takes as its ticket
 * the largest proposal of a quorum, and then attempts: each attempt commits the entry at the
 * ticket on every node (re-adding it where it is missing) and sets the key where it is free
 * and the waiter is the head (the first entry, when it is committed), or where the key
 * already holds the waiter's value. A failed attempt is cleaned up on every node: the key is
 * deleted where it holds the waiter's value, the entry is marked with the clean-up's stamp
 * and lives a full entry life again. A release deletes the key and the entry; a release or a
 * clean-up that leaves the key free tells the head: a marked head is handed the key (set to
 * its value for what is left of its entry's life, message h:STAMP), any other committed head
 * is named (message n:). The waiter counts only hand-offs with the stamp of its last
 * clean-up, none during an attempt, and holds the lock once a quorum handed it the key, valid
 * from its clean-up's sending for an entry's life less the drift allowance.
 *
 * Abstractions. Time is a discrete tick that every remaining time (a key's or an entry's TTL
 * on a node, a client's validity, a waiter's pause) loses at once; a node's clock may run fast
 * by at most DRIFT ticks, so a node may drop a key or an entry up to DRIFT ticks early. Time
 * is urgent: a tick passes only once every request and message in flight has arrived, every
 * round that can be decided was, and every waiter whose pause ended has attempted, except
 * for FAULTS ticks in a run that pass regardless (a slow network, a stalled node, a paused
 * client: a round that outlives its tick fails). Each (client, node) connection is a FIFO
 * queue of requests; a script is one atomic step; a message a script publishes reaches its
 * client at once, unless a fault made it late (it then comes at any later moment) or lost.
 * Faults, FAULTS in all in one run: a tick that passes with work pending, a late or lost
 * message, a node crash (the node loses its keys, its queue, its counter and its pending
 * requests and refuses requests for RESTART_DELAY ticks). After the last fault
 * the system is synchronous, which is what "nodes that recover" means for liveness. Owner
 * values are one per client: a client's requests to a node run in order, so an acquisition's
 * entry and key are gone from a node before its next acquisition's requests run there;
 * messages carry the acquisition's number, as the library's carry the owner value. Stamps
 * are only compared for equality, so a clean-up takes the smallest stamp not in use
 * anywhere, which no request, message or entry can mistake for another (the library's
 * attempt numbers only grow). A counter is lost only in a crash; then it starts above every
 * ticket handed out (the node's clock in microseconds). Each client makes ACQS acquisitions
 * and holds each until it releases it (weak fairness: eventually). Not modelled: extend (a
 * fair key's extend is the mutex's), giving up, try_acquire without a ticket, fencing and
 * replica acknowledgements (a fenced waiter is never handed the key), client crashes. A round
 * (join or attempt) ends once every node answered or at its deadline, one tick; the library
 * ends it as soon as a quorum granted, and -DDECIDE_AT_QUORUM does so too (a larger search).
 *
 * Properties. (a) No two clients believe they hold the lock within their validity, hand-offs
 * included (asserted at every grant). (b1) A waiter whose ticket was committed on a quorum
 * of nodes (ground truth) before another waiter's join began has the smaller ticket
 * (asserted when the later waiter takes its ticket). (b2) A waiter is never granted while
 * another waiter with a smaller (ticket, client) waits with its ticket agreed and none of its
 * entries dropped by a node since its acquisition began (asserted at every grant). (c) A
 * failed attempt leaves no key of its waiter behind once its clean-up ran, except a key a
 * release handed over (asserted at every tick). (d) Liveness, the ltl claim `served`: each
 * client that waits is eventually granted the lock (weak fairness, finitely many faults).
 *
 * Mutants (each must be refuted):
 *   MUTANT_SMALL_QUORUM          a quorum one smaller than a majority (a)
 *   MUTANT_NO_STAMP_CHECK        the waiter counts hand-offs whatever their stamp (a)
 *   MUTANT_VALIDITY_FROM_HEARD   a hand-off's validity counts from its last message, not from
 *                                the clean-up's sending (a)
 *   MUTANT_ANY_WAITER            a release hands the key to the last marked entry of the
 *                                queue, not to the head (b2)
 *   MUTANT_MIN_TICKET            the ticket is the smallest proposal of the quorum (b1, b2)
 *   MUTANT_PENDING_PASSES        a pending entry does not block the committed ones behind it
 *                                (b2)
 *   MUTANT_NO_CLEANUP            a failed attempt is not cleaned up (c)
 *   MUTANT_WAIT_FOREVER          a waiter behind others waits for a message, without its
 *                                refresh period (d only)
 */

#ifndef NODES
#define NODES 3
#endif
#ifndef CLIENTS
#define CLIENTS 2
#endif
#ifndef QUORUM
#ifdef MUTANT_SMALL_QUORUM
#define QUORUM (NODES / 2)
#else
#define QUORUM (NODES / 2 + 1)
#endif
#endif
/* Acquisitions of each client in one run. */
#ifndef ACQS
#define ACQS 1
#endif
/* A key's expiry, an entry's life (three quarters of the expiry in the library), a waiter's
   refresh period and the largest early expiry of a key or an entry on a node, in ticks. */
#ifndef EXPIRY
#define EXPIRY 3
#endif
#ifndef ENTRY
#define ENTRY 2
#endif
#ifndef REFRESH
#define REFRESH 1
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#ifndef RESTART_DELAY
#define RESTART_DELAY EXPIRY
#endif
#ifndef FAULTS
#define FAULTS 0
#endif
/* Requests a connection holds, messages a subscription holds. */
#ifndef QCAP
#define QCAP 3
#endif
#ifndef MCAP
#define MCAP 1
#endif
#define SMAX 15

#define IDX(c, n) ((c) * NODES + (n))
#define NOBODY 255

/* Requests, and messages. */
#define JOIN 1
#define ACQ 2
#define CLEAN 3
#define REL 4
#define NAMED 1
#define HANDED 2
chan q[CLIENTS * NODES] = [QCAP] of { byte, byte };         /* request, ticket or stamp */
chan m[CLIENTS * NODES] = [MCAP] of { byte, byte, byte };   /* late messages: message, stamp,
                                                              acquisition */
#define DELAY 1
#define LOSE 2
byte fate[CLIENTS * NODES];   /* of the next message: 0 it arrives at once, or DELAY or LOSE */
byte inflight;   /* requests on their way */
byte faults;

/* A node: the key (0 free, else its owner + 1) and its TTL; whether an attempt (not a
   hand-off) set it; the counter; ticks left before a crashed node answers again. */
byte key[NODES];
byte kttl[NODES];
bit by_attempt[NODES];
byte ctr[NODES];
bit has_ctr[NODES];
byte down[NODES];
byte highest;   /* the largest proposal or ticket handed out */

/* Client c's entry on node n. */
#define NONE 0
#define PENDING 1
#define COMMITTED 2
byte est[CLIENTS * NODES];
byte enm[CLIENTS * NODES];   /* proposal or ticket */
byte estamp[CLIENTS * NODES];
byte ettl[CLIENTS * NODES];

/* Replies: 0 not awaited, else awaited, ok, or refused (key held, a waiter ahead, node down). */
#define AWAITED 1
#define OK 2
#define REFUSED 3
byte reply[CLIENTS * NODES];
byte proposal[CLIENTS * NODES];
bit heard[CLIENTS * NODES];   /* a hand-off with the current stamp from that node */

#define IDLE 0
#define JOINING 1
#define ATTEMPT 2
#define WAITING 3
#define HOLD 4
byte phase[CLIENTS];
byte acqs[CLIENTS];     /* acquisitions begun: the current one's number */
byte ticket[CLIENTS];   /* 0 until agreed */
byte stamp[CLIENTS];    /* the stamp hand-offs must carry: 0 while none counts */
byte valid[CLIENTS];    /* ticks of validity left: of the attempt, or once held */
byte hvalid[CLIENTS];   /* of a hand-off, from the clean-up's sending */
byte pause[CLIENTS];    /* ticks before a waiter attempts again */
bit woken[CLIENTS];     /* named as the head */
bit overdue[CLIENTS];
bit lost[CLIENTS];      /* a node dropped one of its entries during this acquisition */
bit before[CLIENTS * CLIENTS];   /* [a * CLIENTS + b]: a's ticket was committed on a quorum
                                    when b's join began */

/* Per node, up to 5 nodes; per client, up to 3 clients. */
#define ON(n, e) ((n) < NODES -> (e) : 0)
#define IS(c, n, v) ON(n, reply[IDX(c, n)] == (v))
#define COUNT(c, v) (IS(c, 0, v) + IS(c, 1, v) + IS(c, 2, v) + IS(c, 3, v) + IS(c, 4, v))
#define HEARD(c) (ON(0, heard[IDX(c, 0)]) + ON(1, heard[IDX(c, 1)]) + ON(2, heard[IDX(c, 2)]) + \
                  ON(3, heard[IDX(c, 3)]) + ON(4, heard[IDX(c, 4)]))
#ifdef DECIDE_AT_QUORUM
#define DECIDED(c) (COUNT(c, OK) >= QUORUM || COUNT(c, AWAITED) == 0 || overdue[c])
#else
#define DECIDED(c) (COUNT(c, AWAITED) == 0 || overdue[c])
#endif
#define LEN(c, n) ON(n, len(q[IDX(c, n)]))
#define ROOM(c) (LEN(c, 0) < QCAP && LEN(c, 1) < QCAP && LEN(c, 2) < QCAP && LEN(c, 3) < QCAP && \
                 LEN(c, 4) < QCAP)
#ifdef MUTANT_WAIT_FOREVER
#define PAUSE_OVER(c) (ticket[c] == 0 && pause[c] == 0)
#else
#define PAUSE_OVER(c) (pause[c] == 0)
#endif
#define HANDED_OVER(c) (stamp[c] != 0 && HEARD(c) >= QUORUM)
#define WAKES(c) (woken[c] || PAUSE_OVER(c))
#define MUST_ACT(c) (((phase[c] == JOINING || phase[c] == ATTEMPT) && DECIDED(c)) || \
                     (phase[c] == WAITING && (HANDED_OVER(c) || WAKES(c))))
#define URGENT (inflight > 0 || MUST_ACT(0) || (1 < CLIENTS -> MUST_ACT(1) : 0) || \
                (2 < CLIENTS -> MUST_ACT(2) : 0))

#define BELIEVES(d) (phase[d] == HOLD && valid[d] > 0)
#define WAITS(d) (phase[d] == JOINING || phase[d] == ATTEMPT || phase[d] == WAITING)
/* (ticket, client) order */
#define AHEAD(a, b) (ticket[a] < ticket[b] || (ticket[a] == ticket[b] && (a) < (b)))
#define ENTRY_AHEAD(i, j, a, b) (enm[i] < enm[j] || (enm[i] == enm[j] && (a) < (b)))

/* The liveness claim's propositions, for up to 3 clients. */
#define W0 (phase[0] == JOINING || phase[0] == ATTEMPT || phase[0] == WAITING)
#define H0 (phase[0] == HOLD)
#define W1 (phase[1] == JOINING || phase[1] == ATTEMPT || phase[1] == WAITING)
#define H1 (phase[1] == HOLD)
#define W2 (phase[2] == JOINING || phase[2] == ATTEMPT || phase[2] == WAITING)
#define H2 (phase[2] == HOLD)

inline drop_entry(c, n)
{
    if
    :: est[IDX(c, n)] != NONE -> lost[c] = 1
    :: else
    fi;
    est[IDX(c, n)] = NONE;
    enm[IDX(c, n)] = 0;
    estamp[IDX(c, n)] = 0;
    ettl[IDX(c, n)] = 0
}

inline drop_key(n)
{
    key[n] = 0;
    kttl[n] = 0;
    by_attempt[n] = 0
}

/* Node n's first entry: hd (NOBODY if the queue is empty) and whether it is committed. */
inline first_entry(n)
{
    hd = NOBODY;
    e = 0;
    do
    :: e < CLIENTS ->
        if
#ifdef MUTANT_PENDING_PASSES
        :: est[IDX(e, n)] == COMMITTED &&
#else
        :: est[IDX(e, n)] != NONE &&
#endif
           (hd == NOBODY || ENTRY_AHEAD(IDX(e, n), IDX(hd, n), e, hd)) -> hd = e
        :: else
        fi;
        e++
    :: e >= CLIENTS -> break
    od;
    e = 0;
    hd_committed = (hd != NOBODY -> est[IDX(hd, n)] == COMMITTED : 0)
}

/* A message from node n reaches client d: a hand-off counts if it carries the stamp of the
   waiter's last clean-up (and none counts during an attempt: the stamp is 0 then). */
inline deliver(d, n, kind, s, g)
{
    if
    :: g != acqs[d]   /* for an earlier acquisition */
    :: g == acqs[d] && kind == HANDED && stamp[d] != 0 ->
#ifdef MUTANT_NO_STAMP_CHECK
        heard[IDX(d, n)] = 1
#else
        if
        :: s == stamp[d] -> heard[IDX(d, n)] = 1
        :: else
        fi
#endif
    :: g == acqs[d] && kind == NAMED && (phase[d] == ATTEMPT || phase[d] == WAITING) ->
        woken[d] = 1
    :: else
    fi
}

/* A message arrives at once, unless a fault made the subscription delay or lose it. */
inline publish(d, n, kind, s)
{
    if
    :: fate[IDX(d, n)] == LOSE -> fate[IDX(d, n)] = 0
    :: fate[IDX(d, n)] == DELAY && len(m[IDX(d, n)]) < MCAP ->
        fate[IDX(d, n)] = 0;
        m[IDX(d, n)]!kind, s, acqs[d]
    :: else -> deliver(d, n, kind, s, acqs[d])
    fi
}

/* After a release or a clean-up by client c that left node n's key free: the head, if
   committed and not c, is handed the key if its entry is marked, named otherwise. */
inline tell_head(c, n)
{
    first_entry(n);
#ifdef MUTANT_ANY_WAITER
    /* The last marked entry instead of the head. */
    e = 0;
    do
    :: e < CLIENTS ->
        if
        :: e != c && est[IDX(e, n)] == COMMITTED && estamp[IDX(e, n)] != 0 &&
           (hd == NOBODY || hd == c || !ENTRY_AHEAD(IDX(e, n), IDX(hd, n), e, hd)) ->
            hd = e;
            hd_committed = 1
        :: else
        fi;
        e++
    :: e >= CLIENTS -> break
    od;
    e = 0;
#endif
    if
    :: hd != NOBODY && hd != c && hd_committed ->
        if
        :: estamp[IDX(hd, n)] != 0 ->
            key[n] = hd + 1;
            kttl[n] = ettl[IDX(hd, n)];   /* what is left of the entry's life */
            by_attempt[n] = 0;
            printf("node %d hands the key to client %d (stamp %d)\n", n, hd, estamp[IDX(hd, n)]);
            publish(hd, n, HANDED, estamp[IDX(hd, n)])
        :: else -> publish(hd, n, NAMED, 0)
        fi
    :: else
    fi
}

/* Node n runs client c's request op (with arg) as one script. */
inline serve(c, n)
{
    answer = REFUSED;
    answered = 0;
    if
    :: down[n] > 0   /* refused: the node is down */
    :: else ->
        if
        :: op == JOIN ->
            if
            :: est[IDX(c, n)] == NONE ->
                if
                :: !has_ctr[n] ->   /* starts at the node's clock: above every ticket */
                    has_ctr[n] = 1;
                    ctr[n] = highest
                :: else
                fi;
                ctr[n]++;
                if
                :: ctr[n] > highest -> highest = ctr[n]
                :: else
                fi;
                est[IDX(c, n)] = PENDING;
                enm[IDX(c, n)] = ctr[n];
                estamp[IDX(c, n)] = 0
            :: else   /* a retried join: the same proposal */
            fi;
            ettl[IDX(c, n)] = ENTRY;
            answer = OK;
            answered = enm[IDX(c, n)]
        :: op == ACQ ->
            changed = (est[IDX(c, n)] != COMMITTED);
            est[IDX(c, n)] = COMMITTED;   /* (re-)added, plainly committed: no stamp */
            enm[IDX(c, n)] = arg;
            estamp[IDX(c, n)] = 0;
            ettl[IDX(c, n)] = ENTRY;
            if
            :: !has_ctr[n] || ctr[n] < arg -> ctr[n] = arg; has_ctr[n] = 1
            :: else
            fi;
            if
            :: key[n] != 0 && key[n] != c + 1   /* held */
            :: key[n] == c + 1 ->   /* handed over before this attempt came: kept */
                kttl[n] = EXPIRY;
                by_attempt[n] = 1;
                answer = OK
            :: key[n] == 0 ->
                first_entry(n);
                if
                :: hd != NOBODY && (hd != c || !hd_committed) ->   /* a waiter goes first */
                    if
                    :: changed && hd_committed -> publish(hd, n, NAMED, 0)
                    :: else
                    fi
                :: else ->
                    key[n] = c + 1;
                    kttl[n] = EXPIRY;
                    by_attempt[n] = 1;
                    answer = OK
                fi
            fi
        :: op == CLEAN || op == REL ->
            free = (key[n] != 0 && key[n] != c + 1 -> 0 : 1);
            if
            :: key[n] == c + 1 -> drop_key(n)
            :: else
            fi;
            if
            :: op == REL ->   /* the entry leaves */
                est[IDX(c, n)] = NONE;
                enm[IDX(c, n)] = 0;
                estamp[IDX(c, n)] = 0;
                ettl[IDX(c, n)] = 0
            :: op == CLEAN && arg != 0 && est[IDX(c, n)] == COMMITTED ->   /* marked */
                estamp[IDX(c, n)] = arg;
                ettl[IDX(c, n)] = ENTRY
            :: else
            fi;
            if
            :: free -> tell_head(c, n)
            :: else
            fi;
            answer = OK
        fi
    fi
}

/* A reply counts only if it answers the client's current round (the last request queued). */
#define CURRENT(c, n) (len(q[IDX(c, n)]) == 0 && reply[IDX(c, n)] == AWAITED)

/* Node n's own events: a fast clock expires keys and entries early; a crash loses its keys,
   queue, counter and pending requests. */
#define EARLY(c, n) ((c) < CLIENTS -> (est[IDX(c, n)] != NONE && ettl[IDX(c, n)] <= DRIFT) : 0)
#define FAST(n) ((key[n] != 0 && kttl[n] <= DRIFT) || EARLY(0, n) || EARLY(1, n) || EARLY(2, n))

inline fast_clock(n)
{
    if
    :: key[n] != 0 && kttl[n] <= DRIFT -> drop_key(n)
    :: else
    fi;
    d = 0;
    do
    :: d < CLIENTS ->
        if
        :: EARLY(d, n) -> drop_entry(d, n)
        :: else
        fi;
        d++
    :: d >= CLIENTS -> break
    od;
    d = 0
}

inline crash(n)
{
    faults++;
    printf("node %d crashes\n", n);
    drop_key(n);
    has_ctr[n] = 0;
    ctr[n] = 0;
    d = 0;
    do
    :: d < CLIENTS ->
        drop_entry(d, n);
        do
        :: nempty(q[IDX(d, n)]) -> q[IDX(d, n)]?_, _; inflight--
        :: empty(q[IDX(d, n)]) -> break
        od;
        d++
    :: d >= CLIENTS -> break
    od;
    d = 0;
    down[n] = RESTART_DELAY
}

/* Client c's connection to node n and its subscription there: requests run in order, one
   script each; a late message comes at any later moment; a fault makes the next message late
   or lost. Client 0's also runs node n's own events. */
proctype link(byte c; byte n)
{
    byte op, arg, answer, answered, hd, e, kind, s, g, d;
    bit hd_committed, changed, free;
end:
    do
    :: d_step {
        m[IDX(c, n)]?kind, s, g ->
        deliver(c, n, kind, s, g);
        kind = 0; s = 0; g = 0
    }
    :: d_step {
        faults < FAULTS && fate[IDX(c, n)] == 0 ->
        faults++;
        printf("node %d's next message to client %d will be late\n", n, c);
        fate[IDX(c, n)] = DELAY
    }
    :: d_step {
        faults < FAULTS && fate[IDX(c, n)] == 0 ->
        faults++;
        printf("node %d's next message to client %d will be lost\n", n, c);
        fate[IDX(c, n)] = LOSE
    }
    :: d_step { c == 0 && FAST(n) -> fast_clock(n) }
    :: d_step { c == 0 && faults < FAULTS && down[n] == 0 -> crash(n) }
    :: d_step {
        q[IDX(c, n)]?op, arg ->
        inflight--;
        serve(c, n);
        if
        :: CURRENT(c, n) && (op == JOIN || op == ACQ) ->
            reply[IDX(c, n)] = answer;
            proposal[IDX(c, n)] = answered
        :: else
        fi;
        op = 0; arg = 0; answer = 0; answered = 0; hd = 0; hd_committed = 0; changed = 0; free = 0
    }
    od
}

inline send_all(c, op, arg, awaited)
{
    n = 0;
    do
    :: n < NODES ->
        q[IDX(c, n)]!op, arg;
        inflight++;
        reply[IDX(c, n)] = awaited;
        proposal[IDX(c, n)] = 0;
        n++
    :: n >= NODES -> break
    od;
    n = 0
}

/* The ticket of a's acquisition is committed on a quorum (ground truth). */
inline committed_on_quorum(a)
{
    ok = 0;
    n = 0;
    do
    :: n < NODES ->
        if
        :: ticket[a] != 0 && est[IDX(a, n)] == COMMITTED && enm[IDX(a, n)] == ticket[a] -> ok++
        :: else
        fi;
        n++
    :: n >= NODES -> break
    od;
    n = 0
}

/* Client c's acquisition begins: which waiters have their ticket committed on a quorum. */
inline note_committed(c)
{
    a = 0;
    do
    :: a < CLIENTS ->
        committed_on_quorum(a);
        before[a * CLIENTS + c] = (a != c && WAITS(a) && ok >= QUORUM);
        a++
    :: a >= CLIENTS -> break
    od;
    a = 0;
    ok = 0
}

inline join(c)
{
    woken[c] = 0;
    send_all(c, JOIN, 0, AWAITED);
    phase[c] = JOINING
}

inline attempt(c)
{
    valid[c] = EXPIRY - DRIFT;   /* from the attempt's start */
    stamp[c] = 0;                /* hand-offs stop counting */
    n = 0;
    do
    :: n < NODES -> heard[IDX(c, n)] = 0; n++
    :: n >= NODES -> break
    od;
    woken[c] = 0;
    send_all(c, ACQ, ticket[c], AWAITED);
    phase[c] = ATTEMPT
}

/* (a) and (b2), when client c is granted the lock. */
inline granted(c)
{
    a = 0;
    do
    :: a < CLIENTS ->
        assert(a == c || !BELIEVES(a));
        assert(a == c || !(WAITS(a) && ticket[a] != 0 && !lost[a] && AHEAD(a, c)));
        a++
    :: a >= CLIENTS -> break
    od;
    a = 0;
    printf("client %d holds the lock (ticket %d)\n", c, ticket[c]);
    phase[c] = HOLD
}

inline clear_round(c)
{
    n = 0;
    do
    :: n < NODES -> reply[IDX(c, n)] = 0; proposal[IDX(c, n)] = 0; heard[IDX(c, n)] = 0; n++
    :: n >= NODES -> break
    od;
    n = 0;
    overdue[c] = 0
}

/* The smallest stamp that no entry, request or message of client c carries. */
#define STAMP_USED(c, n, s) ((n) < NODES -> (estamp[IDX(c, n)] == (s) || q[IDX(c, n)]??[CLEAN, eval(s)] || \
                               m[IDX(c, n)]??[HANDED, eval(s), eval(acqs[c])]) : 0)
inline fresh_stamp(c)
{
    s = 1;
    do
    :: STAMP_USED(c, 0, s) || STAMP_USED(c, 1, s) || STAMP_USED(c, 2, s) ||
       STAMP_USED(c, 3, s) || STAMP_USED(c, 4, s) -> s++
    :: else -> break
    od;
    assert(s <= SMAX)
}

proctype client(byte c)
{
    byte n, ok, t, a, s;
end:
    do
    :: d_step {
        phase[c] == IDLE && acqs[c] < ACQS && ROOM(c) ->
        acqs[c]++;
        lost[c] = 0;
        printf("client %d waits\n", c);
        note_committed(c);
        join(c)
    }
    :: d_step {
        phase[c] == JOINING && DECIDED(c) && ROOM(c) ->
        ok = 0;
        t = 0;
        n = 0;
        do
        :: n < NODES ->
            if
            :: reply[IDX(c, n)] == OK ->
                ok++;
#ifdef MUTANT_MIN_TICKET
                if
                :: t == 0 || proposal[IDX(c, n)] < t -> t = proposal[IDX(c, n)]
                :: else
                fi
#else
                if
                :: proposal[IDX(c, n)] > t -> t = proposal[IDX(c, n)]
                :: else
                fi
#endif
            :: else
            fi;
            n++
        :: n >= NODES -> break
        od;
        n = 0;
        clear_round(c);
        if
        :: ok >= QUORUM ->
            ticket[c] = t;
            printf("client %d takes ticket %d\n", c, t);
            /* (b1) */
            a = 0;
            do
            :: a < CLIENTS ->
                assert(!before[a * CLIENTS + c] || ticket[c] > ticket[a]);
                a++
            :: a >= CLIENTS -> break
            od;
            a = 0;
            attempt(c)
        :: else ->   /* joins again after its pause */
            pause[c] = REFRESH;
            phase[c] = WAITING
        fi;
        ok = 0;
        t = 0
    }
    :: d_step {
        phase[c] == ATTEMPT && DECIDED(c) && ROOM(c) ->
        ok = COUNT(c, OK);
        clear_round(c);
        if
        :: ok >= QUORUM && valid[c] > 0 -> granted(c)
        :: else ->
            valid[c] = 0;
#ifdef MUTANT_NO_CLEANUP
            stamp[c] = 0;
#else
            fresh_stamp(c);
            stamp[c] = s;   /* hand-offs with this stamp count from here */
            hvalid[c] = ENTRY - DRIFT;
            printf("client %d's attempt fails (%d nodes): clean-up with stamp %d\n", c, ok, s);
            send_all(c, CLEAN, s, 0);
#endif
            pause[c] = REFRESH;
            phase[c] = WAITING
        fi;
        ok = 0;
        s = 0
    }
    :: d_step {
        phase[c] == WAITING && HANDED_OVER(c) && ROOM(c) ->
#ifdef MUTANT_VALIDITY_FROM_HEARD
        hvalid[c] = ENTRY - DRIFT;
#endif
        if
        :: hvalid[c] > 0 ->
            printf("client %d is handed the lock\n", c);
            valid[c] = hvalid[c];
            stamp[c] = 0;
            clear_round(c);
            granted(c)
        :: else -> attempt(c)   /* too late: it attempts, which keeps the keys handed to it */
        fi
    }
    :: d_step {
        phase[c] == WAITING && !HANDED_OVER(c) && WAKES(c) && ROOM(c) ->
        if
        :: ticket[c] == 0 -> join(c)
        :: else -> attempt(c)
        fi
    }
    :: d_step {
        phase[c] == HOLD && ROOM(c) ->
        printf("client %d releases\n", c);
        valid[c] = 0;
        hvalid[c] = 0;
        ticket[c] = 0;
        stamp[c] = 0;
        woken[c] = 0;
        a = 0;
        do
        :: a < CLIENTS -> before[c * CLIENTS + a] = 0; before[a * CLIENTS + c] = 0; a++
        :: a >= CLIENTS -> break
        od;
        a = 0;
        send_all(c, REL, 0, 0);
        phase[c] = IDLE
    }
    od
}

/* (c): a waiter's key that an attempt set, on a node where its clean-up has run. */
#define ORPHAN(c, n) ON(n, phase[c] == WAITING && key[n] == c + 1 && by_attempt[n] && \
                        len(q[IDX(c, n)]) == 0)

active proctype clock()
{
    byte i, n;
end:
    do
    :: d_step {
        (!URGENT || faults < FAULTS) ->
        if
        :: URGENT -> faults++; printf("tick, with work pending\n")
        :: else -> printf("tick\n")
        fi;
        i = 0;
        do
        :: i < CLIENTS ->
            assert(!ORPHAN(i, 0) && !ORPHAN(i, 1) && !ORPHAN(i, 2) && !ORPHAN(i, 3) &&
                   !ORPHAN(i, 4));
            if
            :: valid[i] > 0 -> valid[i]--
            :: else
            fi;
            if
            :: hvalid[i] > 0 -> hvalid[i]--
            :: else
            fi;
            if
            :: pause[i] > 0 -> pause[i]--
            :: else
            fi;
            overdue[i] = (phase[i] == JOINING || phase[i] == ATTEMPT);
            n = 0;
            do
            :: n < NODES ->
                if
                :: ettl[IDX(i, n)] > 0 ->
                    ettl[IDX(i, n)]--;
                    if
                    :: ettl[IDX(i, n)] == 0 -> drop_entry(i, n)
                    :: else
                    fi
                :: else
                fi;
                n++
            :: n >= NODES -> break
            od;
            i++
        :: i >= CLIENTS -> break
        od;
        i = 0;
        n = 0;
        do
        :: n < NODES ->
            if
            :: kttl[n] > 0 ->
                kttl[n]--;
                if
                :: kttl[n] == 0 -> drop_key(n)
                :: else
                fi
            :: else
            fi;
            if
            :: down[n] > 0 -> down[n]--
            :: else
            fi;
            n++
        :: n >= NODES -> break
        od;
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
        c = 0;
        n = 0
    }
}

/* (d): every client that waits is eventually granted the lock. -DSAFETY leaves it out, for a
   search of the assertions alone. */
#ifdef SAFETY
#elif CLIENTS > 2
ltl served { [] ((W0 -> <> H0) && (W1 -> <> H1) && (W2 -> <> H2)) }
#elif CLIENTS > 1
ltl served { [] ((W0 -> <> H0) && (W1 -> <> H1)) }
#else
ltl served { [] (W0 -> <> H0) }
#endif
