/* SPDX-License-Identifier: BSL-1.0
 *
 * Fencing tokens over Redlock, as fenced_acquire and fence_raise in
 * src/protocol/script_table.cpp and the write_back_token step of src/lock/acquire.cpp run
 * them: an attempt sets the key and bumps the key's counter on each node (a missing counter
 * starts at the node's clock); the token is the largest answer of a granting quorum; the
 * client raises the counters to the token on every node and completes only once a quorum
 * confirmed; a failed attempt or write-back is deleted everywhere.
 *
 * Abstractions. The lock keys are left out: a node may refuse an attempt at any moment (its
 * key held by someone), and grants it otherwise, which admits every behaviour the keys allow
 * and more (the claim does not rest on the keys, nor on time). A round may end at any moment,
 * counting the replies it has. Each (client, node) connection holds the client's latest
 * request until the node runs it; it may run late (after the round ended: its reply is
 * ignored), run with its reply lost, be lost, or be overtaken by the client's next request
 * (then it never runs). Each script is one atomic step. A node may crash (at most CRASHES
 * times in a run) and lose its counters and pending requests; it answers again at once.
 * Releases and clean-ups only delete keys, so they are left out too.
 * A node's clock in microseconds is modelled as a value above every counter value handed out
 * so far, which is the assumption the clock-based start rests on (docs/safety.md). Attempts
 * are bounded (ATTEMPTS in all) so that tokens stay small.
 *
 * Property: if an acquisition starts after another completed, its token is larger (asserted
 * when each acquisition completes, against the largest token completed before it started).
 *
 * A write-back that reaches a node after the node lost its data must not recreate the counter
 * at the (older) token: a later acquisition's quorum may meet the write-back quorum of a
 * completed acquisition only at that node, and would get a token no larger than its token.
 * fence_raise therefore starts a missing counter at the node's clock, as the acquire does
 * (MUTANT_RAISE_FROM_ZERO is the behaviour that reads it as 0; spin refutes it).
 *
 * Mutants (each must be refuted):
 *   MUTANT_SMALL_QUORUM      a quorum one smaller than a majority
 *   MUTANT_NO_WRITE_BACK     the token is used without raising the counters
 *   MUTANT_UNCONFIRMED       the write-back is sent, but not waited for
 *   MUTANT_MIN_TOKEN         the token is the smallest answer of the quorum, not the largest
 *   MUTANT_RAISE_LOWERS      the write-back sets the counter even when it is larger
 *   MUTANT_COUNTER_FROM_ZERO a counter lost in a crash starts again at 0, not at the clock
 *   MUTANT_RAISE_FROM_ZERO   the write-back reads a missing counter as 0 and recreates it at
 *                            the token (below the node's clock)
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
#ifndef CRASHES
#define CRASHES 1
#endif
/* Attempts in one run and requests or replies lost in one run, at most. The defaults keep the
   exhaustive search to seconds; -DATTEMPTS=3 -DLOSSES=1 is the larger setting. */
#ifndef ATTEMPTS
#define ATTEMPTS 2
#endif
#ifndef LOSSES
#define LOSSES 0
#endif

#define IDX(c, n) ((c) * NODES + (n))

/* Symmetry: the clients are alike, and so are the nodes, so the model only explores the runs
   in which client c + 1 makes its first attempt after client c, and node n + 1 runs its first
   request (or loses it, or crashes) after node n: every run is one of these with the clients
   and the nodes numbered in that order. */
bit began[CLIENTS];
bit touched[NODES];
#define NODE_OK(n) ((n) == 0 || touched[(n) - 1])

/* -DSERIAL: an attempt begins only once no other is under way (its requests may still be on
   their way). With ATTEMPTS=2 this leaves out only runs whose assertions hold trivially: two
   attempts that overlap both begin before any acquisition completed, so neither has a token
   to exceed. */
#define BUSY(d) ((d) < CLIENTS && phase[d] != IDLE)
#ifdef SERIAL
#define OVERLAP_BLOCKED (BUSY(0) || BUSY(1) || BUSY(2) || BUSY(3))
#else
#define OVERLAP_BLOCKED 0
#endif

#define ACQ 1
#define RAISE 2
byte pending[CLIENTS * NODES];   /* the request on its way: 0, ACQ or RAISE */
byte pending_arg[CLIENTS * NODES];

byte ctr[NODES];      /* the counter, when it exists */
bit has_ctr[NODES];
byte highest;         /* the largest counter value any node has held */
byte crashes;
byte losses;
byte attempts;

#define AWAITED 1
#define REFUSED 2
#define GRANTED 3
byte reply[CLIENTS * NODES];
/* The largest counter value among the current round's grants so far (the smallest with
   MUTANT_MIN_TOKEN): the token, once the round ends with a quorum. One value per client
   rather than each node's answer keeps the states fewer. */
byte best[CLIENTS];

#define IDLE 0
#define ATTEMPT 1
#define WRITE_BACK 2
byte phase[CLIENTS];
byte token[CLIENTS];
byte floor[CLIENTS];   /* the largest token completed before this acquisition started */
byte completed;        /* the largest token completed so far */

inline send_all(c, op, arg)
{
    n = 0;
    do
    :: n < NODES ->
        pending[IDX(c, n)] = op;
        pending_arg[IDX(c, n)] = arg;
        reply[IDX(c, n)] = AWAITED;
        n++
    :: n >= NODES -> break
    od;
    n = 0;
    best[c] = 0
}

inline clear_replies(c)
{
    n = 0;
    do
    :: n < NODES -> reply[IDX(c, n)] = 0; n++
    :: n >= NODES -> break
    od;
    n = 0;
    best[c] = 0
}

inline count_granted(c)
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

inline done(c)   /* the guard is handed out with token[c] */
{
    printf("client %d completes with token %d (largest completed before it began: %d)\n", c, token[c], floor[c]);
    assert(token[c] > floor[c]);
    if
    :: token[c] > completed -> completed = token[c]
    :: else
    fi;
    phase[c] = IDLE;
    token[c] = 0;
    floor[c] = 0
}

proctype client(byte c)
{
    byte n, ok, t;
end:
    do
    :: d_step {
        phase[c] == IDLE && attempts < ATTEMPTS && (c == 0 || began[c - 1]) && !OVERLAP_BLOCKED ->
        attempts++;
        began[c] = 1;
        floor[c] = completed;
        printf("client %d begins an attempt\n", c);
        send_all(c, ACQ, 0);
        phase[c] = ATTEMPT
    }
    :: d_step {
        phase[c] == ATTEMPT ->   /* the round ends: the replies so far count */
        count_granted(c);
        t = best[c];
        clear_replies(c);
        printf("client %d: %d nodes granted, largest answer %d\n", c, ok, t);
        if
        :: ok >= QUORUM ->
            token[c] = t;
#if defined(MUTANT_NO_WRITE_BACK)
            done(c)
#elif defined(MUTANT_UNCONFIRMED)
            send_all(c, RAISE, t);
            clear_replies(c);
            done(c)
#else
            send_all(c, RAISE, t);
            phase[c] = WRITE_BACK
#endif
        :: else -> phase[c] = IDLE; floor[c] = 0   /* fails; its keys are deleted */
        fi;
        ok = 0;
        t = 0
    }
    :: d_step {
        phase[c] == WRITE_BACK ->
        count_granted(c);
        clear_replies(c);
        printf("client %d: %d nodes confirmed the write-back\n", c, ok);
        if
        :: ok >= QUORUM -> done(c)
        :: else -> phase[c] = IDLE; token[c] = 0; floor[c] = 0
        fi;
        ok = 0
    }
    od
}

/* Node n runs client c's pending request. */
inline serve(c, n, grant)
{
    op = pending[IDX(c, n)];
    arg = pending_arg[IDX(c, n)];
    pending[IDX(c, n)] = 0;
    pending_arg[IDX(c, n)] = 0;
    answered = 0;
    if
    :: op == ACQ && !grant -> answer = REFUSED   /* the key is held */
    :: op == ACQ && grant ->
        if
        :: !has_ctr[n] ->   /* starts at the node's clock */
            has_ctr[n] = 1;
#ifdef MUTANT_COUNTER_FROM_ZERO
            ctr[n] = 0
#else
            ctr[n] = highest
#endif
        :: else
        fi;
        ctr[n]++;
        if
        :: ctr[n] > highest -> highest = ctr[n]
        :: else
        fi;
        answer = GRANTED;
        answered = ctr[n];
        printf("node %d grants client %d, counter %d\n", n, c, ctr[n])
    :: op == RAISE ->
        printf("node %d raises its counter %d to %d for client %d\n", n, ctr[n], arg, c);
#ifdef MUTANT_RAISE_LOWERS
        ctr[n] = arg;
        has_ctr[n] = 1;
#elif defined(MUTANT_RAISE_FROM_ZERO)
        /* A missing counter reads as 0, so it is recreated at the token. */
        if
        :: !has_ctr[n] || ctr[n] < arg -> ctr[n] = arg; has_ctr[n] = 1
        :: else
        fi;
#else
        /* As fence_raise: a missing counter starts at the node's clock, then takes the
           token if that is larger. */
        if
        :: !has_ctr[n] -> has_ctr[n] = 1; ctr[n] = highest
        :: else
        fi;
        if
        :: ctr[n] < arg -> ctr[n] = arg
        :: else
        fi;
#endif
        answer = GRANTED
    fi
}

inline reply_to(c, n)
{
    if
    :: reply[IDX(c, n)] == AWAITED ->
        reply[IDX(c, n)] = answer;
        if
#ifdef MUTANT_MIN_TOKEN
        :: answer == GRANTED && answered > 0 && (best[c] == 0 || answered < best[c]) ->
            best[c] = answered
#else
        :: answer == GRANTED && answered > best[c] -> best[c] = answered
#endif
        :: else
        fi
    :: else   /* late: the round has ended */
    fi
}

proctype link(byte c; byte n)
{
    byte op, arg, answer, answered;
end:
    do
    :: d_step {
        pending[IDX(c, n)] != 0 && NODE_OK(n) ->
        touched[n] = 1;
        serve(c, n, 1);
        reply_to(c, n);
        op = 0; arg = 0; answer = 0; answered = 0
    }
#ifndef NO_REFUSALS
    /* -DNO_REFUSALS leaves this step out, which loses no behaviour: a refused request changes
       nothing on the node and counts as no grant, as a request does that never runs. */
    :: d_step {
        pending[IDX(c, n)] == ACQ && NODE_OK(n) ->
        touched[n] = 1;
        serve(c, n, 0);
        reply_to(c, n);
        op = 0; arg = 0; answer = 0; answered = 0
    }
#endif
    :: d_step {   /* runs, its reply lost */
        pending[IDX(c, n)] != 0 && losses < LOSSES && NODE_OK(n) ->
        touched[n] = 1;
        losses++;
        serve(c, n, 1);
        op = 0; arg = 0; answer = 0; answered = 0
    }
    :: d_step {   /* lost */
        pending[IDX(c, n)] != 0 && losses < LOSSES && NODE_OK(n) ->
        touched[n] = 1;
        losses++;
        pending[IDX(c, n)] = 0;
        pending_arg[IDX(c, n)] = 0
    }
    od
}

proctype node(byte n)
{
    byte c;
end:
    do
    :: d_step {
        /* loses its counter and pending requests; back at once */
        crashes < CRASHES && NODE_OK(n) ->
        touched[n] = 1;
        crashes++;
        printf("node %d crashes\n", n);
        ctr[n] = 0;
        has_ctr[n] = 0;
        c = 0;
        do
        :: c < CLIENTS -> pending[IDX(c, n)] = 0; pending_arg[IDX(c, n)] = 0; c++
        :: c >= CLIENTS -> break
        od;
        c = 0
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
