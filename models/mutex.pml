/* SPDX-License-Identifier: BSL-1.0
 *
 * Redlock, as src/lock/acquire.cpp, guard_operations.cpp and the plain scripts of
 * src/protocol/script_table.cpp run it: an attempt sends SET NX PX to every node at once and
 * holds the lock when a quorum granted it before its validity (counted from the attempt's
 * start, less the drift allowance, validity.hpp) ran out; a failed attempt is deleted on every
 * node that did not refuse it (also those whose replies were lost or late: a refusal is the
 * one answer that says the attempt set nothing there); extend renews the key where it still holds
 * the owner's value; release deletes it where it does.
 *
 * Abstractions. Time is a discrete tick that every counter of remaining time (a key's TTL on a
 * node, a client's validity) loses at once; a node's clock may run fast by at most DRIFT ticks
 * over one expiry, so a node may drop a key up to DRIFT ticks early. Each (client, node)
 * connection is a FIFO queue: a request may wait there for any number of ticks (a stalled
 * node, a slow network), be lost, or run with its reply lost; a reply that comes after the
 * client decided its round is ignored (late). Each script (or SET NX PX) is one atomic step.
 * A node may crash and lose its keys and queued requests, then refuses requests for
 * RESTART_DELAY ticks. A client's pause is any interleaving in which it takes no step while
 * ticks pass. Owner values are one per client: requests of one client to a node run in order,
 * so one acquisition's requests never run after the next one's.
 *
 * Properties: (1) no two clients believe they hold the lock within their validity (asserted at
 * every grant and extension); (2) a failed attempt or a release leaves no key of its owner
 * behind once its requests have run (the clean-up reaches every node that did not refuse it),
 * except where a delete was lost (monitor).
 *
 * Mutants (each must be refuted):
 *   MUTANT_SMALL_QUORUM        a quorum one smaller than a majority
 *   MUTANT_RESTART_AT_ONCE     a crashed node answers again at once, without its keys
 *   MUTANT_NO_DRIFT            the validity does not subtract the drift allowance
 *   MUTANT_VALIDITY_FROM_REPLY the validity counts from the round's end, not its start
 *   MUTANT_NO_CLEANUP          a failed attempt is not deleted
 *   MUTANT_CLEANUP_GRANTED     the clean-up goes only to the nodes that said they granted
 *   MUTANT_UNCHECKED_DELETE    release and clean-up delete the key whoever holds it
 *   MUTANT_UNCHECKED_EXTEND    extend sets the key whoever holds it
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
/* The expiry and the largest early expiry of a key on a node, in ticks. */
#ifndef EXPIRY
#define EXPIRY 2
#endif
#ifndef DRIFT
#define DRIFT 1
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
/* Faults in one run, at most: node crashes, lost requests and lost replies. The default keeps
   the exhaustive search to seconds (under a million states); -DFAULTS=1 (6.8 million states)
   adds one fault of any kind at any moment. */
#ifndef FAULTS
#define FAULTS 0
#endif
/* Attempts per client, at most (0: no bound, each client acquires, extends and releases
   forever). With five nodes the search finishes only with a bound: -DNODES=5 -DATTEMPTS=1
   -DEXTENDS=0 (one attempt each, no extension). */
#ifndef ATTEMPTS
#define ATTEMPTS 0
#endif
/* Requests a connection holds at most; a client waits for room before it sends. */
#ifndef QCAP
#define QCAP 2
#endif

/* Symmetry: the clients are alike, and so are the nodes, so the model only explores the runs
   in which client c + 1 makes its first attempt after client c, and node n + 1 runs its first
   request (or loses it, or crashes) after node n: every run is one of these with the clients
   and the nodes numbered in that order. */
bit touched[NODES];

#define IDX(c, n) ((c) * NODES + (n))
/* Room for k more requests on each of client c's connections (up to 7 nodes). */
#define LEN(c, n) ((n) < NODES -> len(q[IDX(c, n)]) : 0)
#define ROOM(c, k) (LEN(c, 0) <= QCAP - (k) && LEN(c, 1) <= QCAP - (k) && LEN(c, 2) <= QCAP - (k) && \
                    LEN(c, 3) <= QCAP - (k) && LEN(c, 4) <= QCAP - (k) && LEN(c, 5) <= QCAP - (k) && \
                    LEN(c, 6) <= QCAP - (k))

mtype = { ACQ, DEL, EXT };
/* Requests in flight. */
chan q[CLIENTS * NODES] = [QCAP] of { mtype };

/* A node's key: 0 free, else its owner + 1, and the ticks left of its TTL. */
byte key[NODES];
byte ttl[NODES];
byte down[NODES];
byte faults;

/* Replies: 0 not awaited, else awaited, granted or refused. */
#define AWAITED 1
#define GRANTED 2
#define REFUSED 3
byte reply[CLIENTS * NODES];
/* The owner's key on a node was left by a delete that was lost: no clean-up can reach it. */
bit orphan_ok[CLIENTS * NODES];

#define IDLE 0
#define ATTEMPT 1
#define HOLD 2
#define EXTENDING 3
byte phase[CLIENTS];
byte valid[CLIENTS];    /* ticks of validity left */
byte att[CLIENTS];      /* attempts made (with no bound: 1 once it made one) */
/* Extensions per client, at most, with -DEXTENDS=N (without it, no bound). */
#ifdef EXTENDS
byte exts[CLIENTS];     /* extensions begun */
#endif
byte ext_valid[CLIENTS];

/* A round ends once a quorum granted, every awaited node answered, or its deadline (one tick)
   passed. */
#define IS(c, n, v) ((n) < NODES -> (reply[IDX(c, n)] == (v) -> 1 : 0) : 0)
#define COUNT(c, v) (IS(c, 0, v) + IS(c, 1, v) + IS(c, 2, v) + IS(c, 3, v) + IS(c, 4, v) + \
                     IS(c, 5, v) + IS(c, 6, v))
#define DECIDED(c) (COUNT(c, GRANTED) >= QUORUM || COUNT(c, AWAITED) == 0 || overdue[c])
bit overdue[CLIENTS];

#define BELIEVES(d) ((phase[d] == HOLD || phase[d] == EXTENDING) && valid[d] > 0)

inline no_other_holder(c)
{
    d = 0;
    do
    :: d < CLIENTS -> assert(d == c || !BELIEVES(d)); d++
    :: d >= CLIENTS -> break
    od;
    d = 0
}

inline drop_key(n)
{
    if
    :: key[n] != 0 -> orphan_ok[IDX(key[n] - 1, n)] = 0
    :: else
    fi;
    key[n] = 0;
    ttl[n] = 0
}

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
            no_other_holder(c);
            phase[c] = HOLD;
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
                /* A node that refused the attempt set nothing: no delete is sent there. */
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
        phase[c] == HOLD && valid[c] > 0 && ROOM(c, 1) &&
#ifdef EXTENDS
        exts[c] < EXTENDS ->
        exts[c]++;
#else
        1 ->
#endif
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
            no_other_holder(c)
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
            :: key[n] == 0 -> key[n] = c + 1; ttl[n] = EXPIRY; answer = GRANTED
            :: else -> answer = REFUSED
            fi
        :: op == EXT ->
#ifdef MUTANT_UNCHECKED_EXTEND
            if
            :: key[n] != c + 1 -> drop_key(n)
            :: else
            fi;
            key[n] = c + 1;
#endif
            if
            :: key[n] == c + 1 -> ttl[n] = EXPIRY; answer = GRANTED
            :: else -> answer = REFUSED
            fi
        :: op == DEL ->
#ifdef MUTANT_UNCHECKED_DELETE
            drop_key(n);
#endif
            if
            :: key[n] == c + 1 -> drop_key(n)
            :: else
            fi;
            answer = GRANTED
        fi
    fi
}

/* A reply counts only if it answers the client's current round (the last request queued). */
#define CURRENT(c, n) (len(q[IDX(c, n)]) == 0 && reply[IDX(c, n)] == AWAITED)

proctype link(byte c; byte n)
{
    mtype op;
    byte answer;
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
        :: op == DEL && key[n] == c + 1 -> orphan_ok[IDX(c, n)] = 1
        :: else
        fi;
        op = 0
    }
    od
}

/* A node's own events: a key dropped early by a fast clock, a crash. */
proctype node(byte n)
{
    byte c;
    do
    :: d_step { key[n] != 0 && ttl[n] <= DRIFT -> drop_key(n) }
    :: d_step {
        faults < FAULTS && down[n] == 0 && (n == 0 || touched[n - 1]) ->
        touched[n] = 1;
        faults++;
        drop_key(n);
        c = 0;
        do
        :: c < CLIENTS ->
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
        :: i < NODES ->
            if
            :: ttl[i] > 0 ->
                ttl[i]--;
                if
                :: ttl[i] == 0 -> drop_key(i)
                :: else
                fi
            :: else
            fi;
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

/* (2): an idle client's key on a node with nothing of it queued was left by a lost delete. */
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
                assert(!(phase[c] == IDLE && key[n] == c + 1 && len(q[IDX(c, n)]) == 0 &&
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
