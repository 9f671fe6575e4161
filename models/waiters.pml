/* SPDX-License-Identifier: BSL-1.0
 *
 * The registry of waiting clients beside a mutex of one plain key, as the plain_wait_acquire
 * and plain_release_naming scripts of src/protocol/script_table.cpp and the acquire of
 * src/lock/acquire.cpp run it. Each node keeps the lock key and, beside it, a registry: a
 * sorted set {client: since} (since when the client waits, which the client chooses, so every
 * node orders the clients alike) and a hash {client: when a release last named it}. A
 * client's first attempt is a plain SET NX on every node; refused (no quorum), the client
 * starts to listen on its own channel and on the key's, and the clean-up of that attempt,
 * sent to every node, registers it (ZADD NX) and deletes its key where it holds it. Each later
 * attempt clears the client's naming mark and, where it is refused, registers the client
 * again (ZADD NX: it keeps its place); its clean-up goes to the nodes that granted. A release
 * (and a clean-up) that deletes the key on a node names the longest-waiting client there: in
 * the registry's order, an entry whose client nobody hears (PUBLISH counts no receiver: the
 * client crashed, or no longer waits) or that was named over a bound ago and has not tried
 * since is passed over and removed; the first other one gets the message on its own channel
 * (and is marked named if it was not). With nobody left to name, the release publishes on the
 * key's channel, which every waiting client hears. A holder's release also removes its own
 * entry. A client woken by a message attempts; every waiting client also attempts again on its
 * own timer (the fallback), whatever it heard.
 *
 * Abstractions. Safety rests on the key alone (SET NX, compare-and-delete), as in mutex.pml:
 * this model keeps those two operations as they are and adds the registry beside them, which
 * only decides who tries when. So it leaves out what mutex.pml checks about the key and
 * validity (expiry, drift, node crashes, lost requests and replies, late replies): keys do not
 * expire, no node crashes, a client believes it holds the lock from its grant until its
 * release begins, and the safety assertion is that no two clients do at once. There is no
 * time: whether a naming is more than the bound ago is chosen by the model when a release
 * reads it (once past, it stays past: the entry is removed, or its mark stays), the fallback
 * retry is a step a waiting client may take at any moment (weakly fair), and a woken client's
 * attempt "at once" is the same step (whether a message woke a client is kept only for
 * MUTANT_NO_FALLBACK, where it is the only way to attempt again). Each request of a round runs on its node as one atomic step, in any order among
 * the nodes and the other clients' requests; a round is decided once every node answered. A
 * message reaches its listener at once; a message nobody listens to is lost. Random retry
 * delays are what ends clashes of attempts in the library (each fails on a split vote): here
 * an attempt may begin while another client's attempt or clean-up is under way only CLASHES
 * times in a run; after that, attempts do not overlap (the library's random delays make
 * that happen with probability one). The registry's own expiry (PEXPIRE, one lock expiry
 * after the last registration) and the bound of four entries a release looks at (at most
 * three clients here) are left out.
 *
 * Faults, FAULTS in a run: a waiting client (between attempts, nothing of it on any node but
 * its registry entries) crashes (stops for ever; its subscription is gone, so a PUBLISH to it
 * counts no receiver) or stalls (stays subscribed, never tries again). Each client makes ACQS
 * acquisitions.
 *
 * Properties. (1) No two clients believe they hold the lock at once (asserted at every
 * grant). (2) Liveness, the ltl claim `served`: under weak fairness, every client that wants
 * the lock and does not crash or stall eventually holds it, also when a named client crashes
 * or stalls. (3) The registry wakes one: a release (or clean-up) that deletes the key on a
 * node where the registry holds a client that listens and that was not named over the bound
 * ago wakes exactly one client by that node's message, the one of them that has waited
 * longest (asserted at every such release, against which clients listen in truth).
 *
 * Mutants (each must be refuted):
 *   MUTANT_NO_FALLBACK    a waiting client attempts only when a message woke it (2: a client
 *                         named that then crashes or stalls leaves the others waiting for ever)
 *   MUTANT_GRANT_BY_NAME  a named client believes it holds the lock on being named, without
 *                         an attempt (1)
 *   MUTANT_WAKE_ALL       a release publishes on the key's channel only, waking every waiting
 *                         client, as without a registry (3)
 *   MUTANT_NO_PASS_OVER   a release names the first entry whether or not anyone hears it and
 *                         however long ago it was named (3: it names a client named over the
 *                         bound ago while another waits, or a message to a client that crashed
 *                         or no longer waits wakes nobody)
 *   MUTANT_NAME_UNHEARD   a release names the first entry that is within the bound, whether
 *                         or not anyone hears it (3)
 */

#ifndef NODES
#define NODES 3
#endif
#ifndef CLIENTS
#define CLIENTS 3
#endif
#ifndef QUORUM
#define QUORUM (NODES / 2 + 1)
#endif
/* Acquisitions of each client in one run. */
#ifndef ACQS
#define ACQS 1
#endif
/* Crashes and stalls of waiting clients, at most, in one run. */
#ifndef FAULTS
#define FAULTS 1
#endif
/* Attempts, at most, that begin while another client's attempt or clean-up is under way. */
#ifndef CLASHES
#define CLASHES 1
#endif

/* Symmetry: the clients are alike, and so are the nodes, so the model only explores the runs
   in which client c + 1 begins its first acquisition after client c, and node n + 1 runs its
   first request after node n: every run is one of these with the clients and the nodes
   numbered in that order. */
bit touched[NODES];

#define IDX(c, n) ((c) * NODES + (n))
#define NOBODY 255
#define ALL_NODES ((1 << NODES) - 1)

#define IDLE 0
#define ATTEMPT 1
#define CLEANING 2
#define WAITING 3
#define HOLD 4
#define RELEASING 5
#define CRASHED 6
#define STALLED 7
byte phase[CLIENTS];
byte pend[CLIENTS];      /* the nodes the current round has yet to reach, one bit each */
byte granted[CLIENTS];   /* the nodes that granted the current attempt */
bit later[CLIENTS];      /* the current attempt is not the acquisition's first */
bit cleanup_registers[CLIENTS];   /* the current clean-up follows the first attempt */
byte acqs[CLIENTS];      /* acquisitions begun */
byte since[CLIENTS];     /* since when the client waits (0: it does not listen) */
#ifdef MUTANT_NO_FALLBACK
bit woken[CLIENTS];      /* a message reached it since its last attempt began */
#define WAKE(c) woken[c] = 1
#define UNWAKE(c) woken[c] = 0
#else
/* With the fallback, a waiting client may attempt at any moment anyway: whether a message
   woke it changes nothing it may do, so the model does not keep it. */
#define WAKE(c) skip
#define UNWAKE(c) skip
#endif
byte nsince;             /* the last `since` handed out */
byte faults;
byte clashes;

/* Node n: the key (0 free, else its owner + 1); per client, its registry entry's since (0:
   none) and its naming mark (0 none, 1 named within the bound, 2 named over the bound ago). */
byte key[NODES];
byte rs[CLIENTS * NODES];
byte nm[CLIENTS * NODES];
#define RECENT 1
#define OLD 2

/* A client listens from its first refused attempt until its grant, unless it crashed. */
#define LISTENS(e) (since[e] != 0 && phase[e] != CRASHED)
#define BUSY(d) ((d) < CLIENTS -> (phase[d] == ATTEMPT || phase[d] == CLEANING) : 0)
#define CONTENDED(c) (((c) != 0 && BUSY(0)) || ((c) != 1 && BUSY(1)) || ((c) != 2 && BUSY(2)) || \
                      ((c) != 3 && BUSY(3)))
#define MAY_BEGIN(c) (!CONTENDED(c) || clashes < CLASHES)

/* The liveness claim's propositions, for up to 3 clients: wants it, holds it, out (crashed or
   stalled). */
#define WANTS(c) (phase[c] == ATTEMPT || phase[c] == CLEANING || phase[c] == WAITING)
#define W0 WANTS(0)
#define H0 (phase[0] == HOLD)
#define F0 (phase[0] == CRASHED || phase[0] == STALLED)
#define W1 WANTS(1)
#define H1 (phase[1] == HOLD)
#define F1 (phase[1] == CRASHED || phase[1] == STALLED)
#define W2 WANTS(2)
#define H2 (phase[2] == HOLD)
#define F2 (phase[2] == CRASHED || phase[2] == STALLED)

/* (1), as client c is granted the lock. */
inline grant(c)
{
    d = 0;
    do
    :: d < CLIENTS -> assert(d == c || phase[d] != HOLD); d++
    :: d >= CLIENTS -> break
    od;
    d = 0;
    printf("client %d holds the lock\n", c);
    phase[c] = HOLD;
    since[c] = 0;   /* its acquire ends: it stops listening */
    UNWAKE(c);
    pend[c] = 0;
    granted[c] = 0
}

/* A message reaches client e if it listens. */
inline deliver(e)
{
    if
    :: LISTENS(e) ->
        heard++;
        woke = e;
        WAKE(e);
#ifdef MUTANT_GRANT_BY_NAME
        if
        :: phase[e] == WAITING -> grant(e)
        :: else
        fi;
#endif
        printf("node %d's message reaches client %d\n", n, e)
    :: else
    fi
}

/* After a release or a clean-up deleted the key on node n: names the longest-waiting client
   that is heard and not stalled past the bound, passing over (and removing) the others in
   front of it; with nobody to name, publishes on the key's channel. Checks (3). */
inline name_next(n)
{
    /* Time has passed the bound on some of node n's namings, or not: only a release reads
       them, so the model decides it here, for each naming still within the bound. */
    e = 0;
    do
    :: e < CLIENTS ->
        if
        :: nm[IDX(e, n)] == RECENT -> nm[IDX(e, n)] = OLD
        :: true
        fi;
        e++
    :: e >= CLIENTS -> break
    od;
    /* (3)'s expectation, from which clients listen in truth: the registered client that
       listens, not named over the bound ago, that has waited longest. */
    best = NOBODY;
    e = 0;
    do
    :: e < CLIENTS ->
        if
        :: rs[IDX(e, n)] != 0 && LISTENS(e) && nm[IDX(e, n)] != OLD &&
           (best == NOBODY || rs[IDX(e, n)] < rs[IDX(best, n)]) -> best = e
        :: else
        fi;
        e++
    :: e >= CLIENTS -> break
    od;
    heard = 0;
    woke = NOBODY;
#ifdef MUTANT_WAKE_ALL
    e = 0;
    do
    :: e < CLIENTS -> deliver(e); e++
    :: e >= CLIENTS -> break
    od;
#else
    do
    :: true ->
        /* The registry's first entry. */
        hd = NOBODY;
        e = 0;
        do
        :: e < CLIENTS ->
            if
            :: rs[IDX(e, n)] != 0 && (hd == NOBODY || rs[IDX(e, n)] < rs[IDX(hd, n)]) -> hd = e
            :: else
            fi;
            e++
        :: e >= CLIENTS -> break
        od;
        if
        :: hd == NOBODY ->   /* nobody to name: the key's channel */
            e = 0;
            do
            :: e < CLIENTS -> deliver(e); e++
            :: e >= CLIENTS -> break
            od;
            break
#ifdef MUTANT_NO_PASS_OVER
        :: else ->
#else
        #ifdef MUTANT_NAME_UNHEARD
        :: hd != NOBODY && nm[IDX(hd, n)] != OLD ->
#else
        :: hd != NOBODY && LISTENS(hd) && nm[IDX(hd, n)] != OLD ->
#endif
#endif
            deliver(hd);
            if
            :: nm[IDX(hd, n)] == 0 -> nm[IDX(hd, n)] = RECENT
            :: else
            fi;
            break
#ifndef MUTANT_NO_PASS_OVER
        :: else ->   /* nobody hears it, or it was named over the bound ago: passed over */
            printf("node %d passes over client %d\n", n, hd);
            rs[IDX(hd, n)] = 0;
            nm[IDX(hd, n)] = 0
#endif
        fi
    od;
#endif
    /* (3): one client hears of it, the one expected */
    assert(best == NOBODY || heard == 1);
    assert(best == NOBODY || woke == best);
    best = NOBODY;
    hd = NOBODY;
    woke = NOBODY;
    heard = 0;
    e = 0
}

/* Client c's attempt, every node having answered: granted, or cleaned up. */
inline decide(c)
{
    ok = 0;
    n = 0;
    do
    :: n < NODES ->
        if
        :: granted[c] & (1 << n) -> ok++
        :: else
        fi;
        n++
    :: n >= NODES -> break
    od;
    n = 0;
    if
    :: ok >= QUORUM -> grant(c)
    :: else ->
        cleanup_registers[c] = !later[c];
        if
        :: !later[c] ->   /* it listens from now on; its clean-up goes everywhere */
            nsince++;
            since[c] = nsince;
            pend[c] = ALL_NODES
        :: else -> pend[c] = granted[c]   /* a refusal set nothing */
        fi;
        granted[c] = 0;
        phase[c] = (pend[c] != 0 -> CLEANING : WAITING)
    fi;
    ok = 0
}

/* Picks a node n that client c's round has yet to reach. */
inline pick_node(c)
{
    if
    :: pend[c] & 1 -> n = 0
    :: (pend[c] & 2) && touched[0] -> n = 1
    :: (pend[c] & 4) && touched[1] -> n = 2
    :: (pend[c] & 8) && touched[2] -> n = 3
    :: (pend[c] & 16) && touched[3] -> n = 4
    fi;
    touched[n] = 1;
    pend[c] = pend[c] & ~(1 << n)
}

inline begin_attempt(c)
{
    if
    :: CONTENDED(c) -> clashes++
    :: else
    fi;
    UNWAKE(c);
    granted[c] = 0;
    pend[c] = ALL_NODES;
    phase[c] = ATTEMPT
}

active [CLIENTS] proctype client()
{
    byte c = _pid;
    byte n, d, e, hd, best, woke, heard, ok;
end:
    do
    :: d_step {   /* an acquisition begins: its first attempt, a plain SET NX */
        phase[c] == IDLE && acqs[c] < ACQS && (c == 0 || acqs[c - 1] > 0) && MAY_BEGIN(c) ->
        acqs[c]++;
        later[c] = 0;
        begin_attempt(c)
    }
    :: atomic {   /* the attempt runs on a node; once every node answered, it is decided */
        phase[c] == ATTEMPT && pend[c] != 0 ->
        pick_node(c);
        if
        :: later[c] -> nm[IDX(c, n)] = 0   /* it tried */
        :: else
        fi;
        if
        :: key[n] == 0 -> key[n] = c + 1; granted[c] = granted[c] | (1 << n)
        :: else ->
            if
            :: later[c] && rs[IDX(c, n)] == 0 -> rs[IDX(c, n)] = since[c]   /* ZADD NX */
            :: else
            fi
        fi;
        n = 0;
        if
        :: pend[c] == 0 -> decide(c)
        :: else
        fi
    }
    :: atomic {   /* the clean-up runs on a node */
        phase[c] == CLEANING && pend[c] != 0 ->
        pick_node(c);
        if
        :: cleanup_registers[c] && rs[IDX(c, n)] == 0 -> rs[IDX(c, n)] = since[c]
        :: else
        fi;
        if
        :: key[n] == c + 1 -> key[n] = 0; name_next(n)
        :: else
        fi;
        if
        :: pend[c] == 0 -> cleanup_registers[c] = 0; phase[c] = WAITING
        :: else
        fi;
        n = 0
    }
#ifdef MUTANT_NO_FALLBACK
    :: d_step { phase[c] == WAITING && woken[c] && MAY_BEGIN(c) -> later[c] = 1; begin_attempt(c) }
#else
    :: d_step { phase[c] == WAITING && MAY_BEGIN(c) -> later[c] = 1; begin_attempt(c) }
#endif
    :: d_step {
        phase[c] == WAITING && faults < FAULTS ->
        faults++;
        printf("client %d crashes\n", c);
        phase[c] = CRASHED
    }
    :: d_step {
        phase[c] == WAITING && faults < FAULTS ->
        faults++;
        printf("client %d stalls\n", c);
        phase[c] = STALLED
    }
    :: d_step {
        phase[c] == HOLD ->
        printf("client %d releases\n", c);
        pend[c] = ALL_NODES;
        phase[c] = RELEASING
    }
    :: atomic {   /* the release runs on a node: compare-and-delete, then it names */
        phase[c] == RELEASING && pend[c] != 0 ->
        pick_node(c);
        if
        :: key[n] == c + 1 ->
            key[n] = 0;
            rs[IDX(c, n)] = 0;
            nm[IDX(c, n)] = 0;
            name_next(n)
        :: else
        fi;
        if
        :: pend[c] == 0 -> phase[c] = IDLE
        :: else
        fi;
        n = 0
    }
    od
}

/* (2): every client that wants the lock, unless it crashes or stalls, eventually holds it.
   -DSAFETY leaves it out, for a search of the assertions alone. */
#ifdef SAFETY
#elif CLIENTS > 2
ltl served { [] ((W0 -> <> (H0 || F0)) && (W1 -> <> (H1 || F1)) && (W2 -> <> (H2 || F2))) }
#elif CLIENTS > 1
ltl served { [] ((W0 -> <> (H0 || F0)) && (W1 -> <> (H1 || F1))) }
#else
ltl served { [] (W0 -> <> (H0 || F0)) }
#endif
