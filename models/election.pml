/* SPDX-License-Identifier: BSL-1.0
 *
 * Leader election, as src/lock/election.cpp runs it over the fenced scripts and the
 * election_* scripts of src/protocol/script_table.cpp: a campaign is a fenced acquire (each
 * node that grants sets the key to the attempt's owner value and increments its counter, a
 * missing counter starting at the node's clock; the term is the largest answer of a granting
 * quorum, written back (raised) on every node and used once a quorum confirmed), then a
 * publication round (election_proclaim: a node stores {owner, term} in the hash beside the key
 * only where the key holds the owner); the candidate leads once a quorum stored it. A failed
 * attempt is deleted on every node that did not refuse it; a failed write-back or
 * publication, and a resignation, delete the key and the hash where they are the owner's
 * (election_release). A reader (election_read on each node, then view_of) reads every node
 * once per read; a node names the hash's owner only while its key holds that owner; the reader
 * names the owner (and its term) that a quorum of nodes name.
 *
 * Abstractions, as in mutex.pml and fencing.pml. Time is a discrete tick that every remaining
 * time (a key's TTL, a client's validity, a crashed node's restart delay) loses at once; a
 * node may drop a key up to DRIFT ticks early, and a client's validity subtracts that
 * allowance. Each (client, node) connection is a FIFO queue of QCAP requests (a client sends
 * its next round once each of its connections has room), whose requests may wait any number
 * of ticks and (LOSSES) be lost or run with their reply lost; a reply after the client decided
 * its round is ignored. Each script is one atomic step. A node may crash (CRASHES in a run): it
 * loses its key, counter, hash and queued requests, and refuses requests for RESTART_DELAY
 * ticks. A node's clock in microseconds is a value above every counter handed out so far
 * (fencing.pml). Owner values are one per attempt (an election refuses a fixed value), and
 * attempts are bounded (ATTEMPTS in all, of any clients; client 1 makes its first attempt after
 * client 0's first, which loses no run up to the clients' numbering). The fair queue is left
 * out: it only decides who may attempt, and a fenced waiter is never handed the key, so every
 * leadership begins with an attempt; here any client may attempt at any moment, also while
 * another attempts or leads, which admits every order the queue allows and more. Extensions
 * (the watchdog) are left out: a leadership lasts one validity. The hash is kept until a
 * publication, a resignation or a crash replaces it (the real one expires with its key): the
 * reader's safety must rest on its key check, not on the hash's expiry. Published values and
 * versions are left out: a publication stores the owner, and its term is always the owner's.
 *
 * Properties (asserted):
 *   (1) no two clients believe they hold the lock (from the grant of their attempt) within
 *       their validity; asserted at each grant and each completed campaign;
 *   (2) each leader's term is greater than the term of every earlier leader (a leader: a
 *       campaign whose publication a quorum confirmed); asserted as each campaign completes;
 *   (3) a reader names only a real leadership: an owner whose attempt was granted, whose
 *       publication was stored on a quorum of nodes, and that was not over before the read
 *       began (over: its key is on no node and no attempt request of it is queued, so none can
 *       come back); and the terms one reader names over its reads never decrease;
 *   (4) a publication, on a node where its owner holds the key, is replaced or deleted there
 *       by its owner's requests only (readers go on seeing the leader); asserted after every
 *       script.
 *
 * Sizes. The defaults (3 nodes, 2 clients, 2 attempts, one request per connection, exact
 * clocks, no fault, a reader) keep the exhaustive search under 2 million states. Rows of
 * scripts/check-models.sh add, without the reader (READER=0): a crash with the delayed
 * restart (CRASHES=1), a clock a tick fast (EXPIRY=2 DRIFT=1), two requests per connection
 * (QCAP=2), and one lost request or reply (LOSSES=1). A write-back lost on its way to a node
 * whose publication then arrives (on a new connection) would leave that node's counter below
 * the term, and a candidate whose attempt began before that leader completed could lead next
 * with the same term: the publication raises the counter too (MUTANT_PUBLISH_NO_RAISE shows
 * what happens without it).
 *
 * Mutants (each must be refuted):
 *   MUTANT_SMALL_QUORUM      a quorum one smaller than a majority, for every round
 *   MUTANT_PUBLISH_NO_RAISE  the publication leaves the fencing counter as it is (with LOSSES=1)
 *   MUTANT_READER_QUORUM     the reader names what a quorum one smaller names
 *   MUTANT_UNCHECKED_PUBLISH a publication is stored whoever holds the key
 *   MUTANT_NO_WRITE_BACK     the term is used without its write-back (nor the publication's raise)
 *   MUTANT_MIN_TERM          the term is the smallest answer of the quorum, not the largest
 *   MUTANT_RESTART_AT_ONCE   a crashed node answers again at once, without its keys
 *                            (with CRASHES=1)
 *   MUTANT_NO_DRIFT          the validity does not subtract the drift allowance (with DRIFT=1)
 *   MUTANT_READER_NO_KEY     a node names the hash's owner whoever holds the key
 *   MUTANT_UNCHECKED_RESIGN  a resignation deletes the hash whoever it names
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
#ifdef MUTANT_READER_QUORUM
#define READ_QUORUM (QUORUM - 1)
#else
#define READ_QUORUM QUORUM
#endif
/* The expiry and the largest early expiry of a key on a node, in ticks. */
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
/* Attempts in one run (of all clients together, at most 7: the reader keeps a bit for each),
   node crashes, and requests or replies lost. */
#ifndef ATTEMPTS
#define ATTEMPTS 2
#endif
#ifndef CRASHES
#define CRASHES 0
#endif
#ifndef LOSSES
#define LOSSES 0
#endif
/* 1: a reader runs beside the clients (property 3); 0: none. */
#ifndef READER
#define READER 1
#endif
/* Requests a connection holds at most; a client waits for room before it sends. */
#ifndef QCAP
#define QCAP 1
#endif

#define IDX(c, n) ((c) * NODES + (n))
/* Room for one more request on each of client c's connections (up to 7 nodes). */
#define LEN(c, n) ((n) < NODES -> len(q[IDX(c, n)]) : 0)
#define ROOM(c) (LEN(c, 0) < QCAP && LEN(c, 1) < QCAP && LEN(c, 2) < QCAP && LEN(c, 3) < QCAP && \
                 LEN(c, 4) < QCAP && LEN(c, 5) < QCAP && LEN(c, 6) < QCAP)

mtype = { ACQ, RAISE, PUB, DEL };
/* Requests in flight: the operation, the attempt's owner value, the term. */
chan q[CLIENTS * NODES] = [QCAP] of { mtype, byte, byte };

/* A node: its key (0 free, else the owner value) and the key's TTL, its counter, its hash's
   owner (0: no hash; the term it stores is always its owner's, term_of), the ticks until it
   answers again after a crash. */
byte key[NODES];
byte ttl[NODES];
byte ctr[NODES];
bit has_ctr[NODES];
byte howner[NODES];
byte down[NODES];
byte highest;   /* the largest counter value any node has held: below the nodes' clocks */
byte crashes;
byte losses;

/* Per attempt (owner value 1..ATTEMPTS): its term once granted (0 before), the nodes that
   stored its publication (counted up to a quorum: each node runs it at most once), its attempt
   requests still queued. */
byte attempts;
byte term_of[ATTEMPTS + 1];
byte pub_count[ATTEMPTS + 1];
byte acq_queued[ATTEMPTS + 1];
byte led;   /* the largest term of a leader so far */

#define AWAITED 1
#define GRANTED 2
#define REFUSED 3
byte reply[CLIENTS * NODES];
byte answer_term[CLIENTS * NODES];

#define IDLE 0
#define ATTEMPT 1
#define WRITE_BACK 2
#define PUBLISH 3
#define LEAD 4
byte phase[CLIENTS];
byte owner[CLIENTS];   /* the current attempt's owner value */
byte term[CLIENTS];
byte valid[CLIENTS];   /* ticks of validity left */
bit overdue[CLIENTS];

#define IS(c, n, v) ((n) < NODES -> (reply[IDX(c, n)] == (v) -> 1 : 0) : 0)
#define COUNT(c, v) (IS(c, 0, v) + IS(c, 1, v) + IS(c, 2, v) + IS(c, 3, v) + IS(c, 4, v) + \
                     IS(c, 5, v) + IS(c, 6, v))
/* A round ends once a quorum granted, every awaited node answered, or its deadline passed. */
#define DECIDED(c) (COUNT(c, GRANTED) >= QUORUM || COUNT(c, AWAITED) == 0 || overdue[c])

/* Client d believes it holds the lock (and leads, once published) within its validity. */
#define BELIEVES(d) (phase[d] >= WRITE_BACK && valid[d] > 0)

#define HAS_KEY(o, n) ((n) < NODES -> (key[n] == (o) -> 1 : 0) : 0)
#define KEYS_OF(o) (HAS_KEY(o, 0) + HAS_KEY(o, 1) + HAS_KEY(o, 2) + HAS_KEY(o, 3) + \
                    HAS_KEY(o, 4) + HAS_KEY(o, 5) + HAS_KEY(o, 6))
/* Attempt o can never hold a key again. */
#define OVER(o) ((o) <= attempts && acq_queued[o] == 0 && KEYS_OF(o) == 0)


inline no_other_holder(c)
{
    d = 0;
    do
    :: d < CLIENTS -> assert(d == c || !BELIEVES(d)); d++
    :: d >= CLIENTS -> break
    od;
    d = 0
}

inline clear_replies(c)
{
    n = 0;
    do
    :: n < NODES -> reply[IDX(c, n)] = 0; answer_term[IDX(c, n)] = 0; n++
    :: n >= NODES -> break
    od;
    n = 0
}

/* Counts client c's granted replies (ok) and their largest (or smallest) term (t). */
inline count_replies(c)
{
    ok = 0;
    t = 0;
    n = 0;
    do
    :: n < NODES ->
        if
        :: reply[IDX(c, n)] == GRANTED ->
            ok++;
#ifdef MUTANT_MIN_TERM
            if
            :: t == 0 || answer_term[IDX(c, n)] < t -> t = answer_term[IDX(c, n)]
            :: else
            fi
#else
            if
            :: answer_term[IDX(c, n)] > t -> t = answer_term[IDX(c, n)]
            :: else
            fi
#endif
        :: else
        fi;
        n++
    :: n >= NODES -> break
    od;
    n = 0
}

inline send_all(c, op, arg)
{
    n = 0;
    do
    :: n < NODES -> q[IDX(c, n)]!op, owner[c], arg; reply[IDX(c, n)] = AWAITED; n++
    :: n >= NODES -> break
    od;
    n = 0
}

/* Gives up the attempt, the write-back, the publication or the leadership: deletes the key
   and the hash where they are the owner's (no reply awaited). */
inline resign(c)
{
    printf("client %d (owner %d) gives up or resigns\n", c, owner[c]);
    clear_replies(c);
    n = 0;
    do
    :: n < NODES -> q[IDX(c, n)]!DEL, owner[c], 0; n++
    :: n >= NODES -> break
    od;
    n = 0;
    phase[c] = IDLE;
    valid[c] = 0;
    term[c] = 0;
    owner[c] = 0
}

proctype client(byte c)
{
    byte n, ok, t, d;
end:
    do
    :: d_step {
        phase[c] == IDLE && attempts < ATTEMPTS && (c == 0 || attempts > 0) && ROOM(c) ->
        attempts++;
        owner[c] = attempts;
        acq_queued[owner[c]] = NODES;
        valid[c] = EXPIRY - ALLOWANCE;   /* from the attempt's start */
        printf("client %d begins attempt %d\n", c, owner[c]);
        send_all(c, ACQ, 0);
        phase[c] = ATTEMPT
    }
    :: d_step {
        phase[c] == ATTEMPT && DECIDED(c) && ROOM(c) ->
        overdue[c] = 0;
        count_replies(c);
        if
        :: ok >= QUORUM && valid[c] > 0 ->
            no_other_holder(c);
            term[c] = t;
            term_of[owner[c]] = t;
            printf("client %d (owner %d) granted, term %d\n", c, owner[c], t);
            clear_replies(c);
#ifdef MUTANT_NO_WRITE_BACK
            send_all(c, PUB, t);
            phase[c] = PUBLISH
#else
            send_all(c, RAISE, t);
            phase[c] = WRITE_BACK
#endif
        :: else ->
            /* A node that refused the attempt set nothing: no delete goes there. */
            n = 0;
            do
            :: n < NODES ->
                if
                :: reply[IDX(c, n)] != REFUSED -> q[IDX(c, n)]!DEL, owner[c], 0
                :: else
                fi;
                n++
            :: n >= NODES -> break
            od;
            n = 0;
            printf("client %d (owner %d) fails: %d granted\n", c, owner[c], ok);
            clear_replies(c);
            phase[c] = IDLE;
            valid[c] = 0;
            owner[c] = 0
        fi;
        ok = 0;
        t = 0
    }
    :: d_step {
        phase[c] == WRITE_BACK && DECIDED(c) && ROOM(c) ->
        overdue[c] = 0;
        count_replies(c);
        clear_replies(c);
        if
        :: ok >= QUORUM && valid[c] > 0 ->
            printf("client %d: term %d confirmed\n", c, term[c]);
            send_all(c, PUB, term[c]);
            phase[c] = PUBLISH
        :: else -> resign(c)
        fi;
        ok = 0;
        t = 0
    }
    :: d_step {
        phase[c] == PUBLISH && DECIDED(c) && ROOM(c) ->
        overdue[c] = 0;
        count_replies(c);
        if
        :: ok >= QUORUM && valid[c] > 0 ->
            printf("client %d leads, term %d (the largest earlier: %d)\n", c, term[c], led);
            no_other_holder(c);
            assert(term[c] > led);   /* (2) */
            led = term[c];
            clear_replies(c);
            phase[c] = LEAD
        :: else -> resign(c)
        fi;
        ok = 0;
        t = 0
    }
    :: d_step { phase[c] == LEAD && ROOM(c) -> resign(c) }
    od
}

inline drop_key(n)
{
    key[n] = 0;
    ttl[n] = 0
}

/* Node n runs a request of client c: op, o (its owner value), arg (a term). */
inline serve(c, n)
{
    /* (4): the key holder's publication on this node, before the request */
    if
    :: howner[n] != 0 && howner[n] == key[n] -> kept = howner[n]
    :: else -> kept = 0
    fi;
    answer = 0;
    answered = 0;
    if
    :: op == ACQ -> acq_queued[o]--
    :: else
    fi;
    if
    :: down[n] > 0   /* refused without an answer: the node is restarting */
    :: else ->
        if
        :: op == ACQ ->
            if
            :: key[n] == 0 ->
                key[n] = o;
                ttl[n] = EXPIRY;
                if
                :: !has_ctr[n] -> has_ctr[n] = 1; ctr[n] = highest   /* the node's clock */
                :: else
                fi;
                ctr[n]++;
                if
                :: ctr[n] > highest -> highest = ctr[n]
                :: else
                fi;
                answer = GRANTED;
                answered = ctr[n];
                printf("node %d: key set for owner %d, counter %d\n", n, o, ctr[n])
            :: else -> answer = REFUSED; printf("node %d: refuses owner %d\n", n, o)
            fi
        :: op == RAISE ->   /* fence_raise */
            if
            :: !has_ctr[n] -> has_ctr[n] = 1; ctr[n] = highest
            :: else
            fi;
            if
            :: ctr[n] < arg -> ctr[n] = arg
            :: else
            fi;
            printf("node %d: counter raised to %d for owner %d\n", n, ctr[n], o);
            answer = GRANTED
        :: op == PUB ->   /* election_proclaim */
#ifdef MUTANT_UNCHECKED_PUBLISH
            if
            :: true ->
#else
            if
            :: key[n] == o ->
#endif
#if !defined(MUTANT_PUBLISH_NO_RAISE) && !defined(MUTANT_NO_WRITE_BACK)
                /* The publication raises the counter to the term, as a write-back would (the
                   write-back's mutant leaves out both raises: the term reaches no counter). */
                if
                :: !has_ctr[n] || ctr[n] < arg -> has_ctr[n] = 1; ctr[n] = arg
                :: else
                fi;
#endif
                howner[n] = o;
                if
                :: pub_count[o] < QUORUM -> pub_count[o]++
                :: else
                fi;
                printf("node %d: stores owner %d, term %d (key %d)\n", n, o, arg, key[n]);
                answer = GRANTED
            :: else -> answer = REFUSED
            fi
        :: op == DEL ->   /* election_release */
            printf("node %d: deletes owner %d\n", n, o);
            if
            :: key[n] == o -> drop_key(n)
            :: else
            fi;
#ifdef MUTANT_UNCHECKED_RESIGN
            howner[n] = 0;
#else
            if
            :: howner[n] == o -> howner[n] = 0
            :: else
            fi;
#endif
            answer = GRANTED
        fi
    fi;
    /* (4): where the key still holds its owner, another owner's request left its hash alone */
    assert(kept == 0 || kept == o || key[n] != kept || howner[n] == kept);
    kept = 0
}

/* A reply counts only if it answers the client's current round (the last request queued). */
#define CURRENT(c, n) (len(q[IDX(c, n)]) == 0 && reply[IDX(c, n)] == AWAITED)

proctype link(byte c; byte n)
{
    mtype op;
    byte o, arg, answer, answered, kept;
end:
    do
    :: d_step {
        q[IDX(c, n)]?op, o, arg ->
        serve(c, n);
        if
        :: answer != 0 && CURRENT(c, n) ->
            reply[IDX(c, n)] = answer;
            answer_term[IDX(c, n)] = answered
        :: else
        fi;
        op = 0; o = 0; arg = 0; answer = 0; answered = 0
    }
    :: d_step {   /* the request runs, its reply is lost */
        len(q[IDX(c, n)]) > 0 && losses < LOSSES ->
        losses++;
        q[IDX(c, n)]?op, o, arg;
        serve(c, n);
        op = 0; o = 0; arg = 0; answer = 0; answered = 0
    }
    :: d_step {   /* the request is lost */
        len(q[IDX(c, n)]) > 0 && losses < LOSSES ->
        losses++;
        q[IDX(c, n)]?op, o, arg;
        if
        :: op == ACQ -> acq_queued[o]--
        :: else
        fi;
        op = 0; o = 0; arg = 0
    }
    od
}

/* A node's own events: a key dropped early by a fast clock, a crash. */
proctype node(byte n)
{
    byte c;
    mtype op;
    byte o, arg;
end:
    do
    :: d_step {
        key[n] != 0 && ttl[n] <= DRIFT ->
        printf("node %d: drops owner %d's key early\n", n, key[n]);
        drop_key(n)
    }
    :: d_step {
        crashes < CRASHES && down[n] == 0 ->
        crashes++;
        printf("node %d crashes\n", n);
        drop_key(n);
        ctr[n] = 0;
        has_ctr[n] = 0;
        howner[n] = 0;
        c = 0;
        do
        :: c < CLIENTS ->
            do
            :: nempty(q[IDX(c, n)]) ->
                q[IDX(c, n)]?op, o, arg;
                if
                :: op == ACQ -> acq_queued[o]--
                :: else
                fi
            :: empty(q[IDX(c, n)]) -> break
            od;
            c++
        :: c >= CLIENTS -> break
        od;
        c = 0; op = 0; o = 0; arg = 0;
        down[n] = RESTART_DELAY
    }
    od
}

active proctype clock()
{
    byte i;
end:
    do
    :: d_step {
        printf("tick\n");
        i = 0;
        do
        :: i < CLIENTS ->
            if
            :: valid[i] > 0 -> valid[i]--
            :: else
            fi;
            overdue[i] = (phase[i] == ATTEMPT || phase[i] == WRITE_BACK || phase[i] == PUBLISH);
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

/* (3): one reader that reads every node once per read, in the nodes' order, each read of a
   node one atomic step (election_read), then names what a quorum of them names (view_of). */
byte named[NODES];   /* the owner the node named in the current read (0: nobody) */

inline read_node(i)
{
    if
    :: down[i] > 0   /* no answer */
    :: else ->
        answers++;
#ifdef MUTANT_READER_NO_KEY
        if
        :: howner[i] != 0 ->
#else
        if
        :: howner[i] != 0 && key[i] == howner[i] ->
#endif
            named[i] = howner[i]
        :: else
        fi
    fi
}

#if READER
active proctype reader()
#else
proctype reader()
#endif
{
    byte i, j, same, answers, over_before, last_term, o;
end:
    do
    :: d_step {
        i < NODES - 1 ->
        if
        :: i == 0 ->   /* the attempts over before the read began */
            o = 1;
            do
            :: o <= ATTEMPTS ->
                if
                :: OVER(o) -> over_before = over_before | (1 << o)
                :: else
                fi;
                o++
            :: o > ATTEMPTS -> break
            od;
            o = 0
        :: else
        fi;
        read_node(i);
        i++
    }
    :: d_step {
        i == NODES - 1 ->   /* the last node, then the answer */
        read_node(i);
        if
        :: answers >= READ_QUORUM ->
            j = 0;
            do
            :: j < NODES && named[j] != 0 ->
                same = 0;
                i = 0;
                do
                :: i < NODES ->
                    if
                    :: named[i] == named[j] -> same++
                    :: else
                    fi;
                    i++
                :: i >= NODES -> break
                od;
                if
                :: same >= READ_QUORUM -> break
                :: else -> j++
                fi
            :: j < NODES && named[j] == 0 -> j++
            :: j >= NODES -> break
            od;
            if
            :: j < NODES ->
                o = named[j];
                printf("reader names owner %d, term %d\n", o, term_of[o]);
                assert(term_of[o] != 0);                   /* granted */
                assert(pub_count[o] >= QUORUM);            /* published */
                assert(((over_before >> o) & 1) == 0);     /* not over before the read */
                assert(term_of[o] >= last_term);           /* terms never go back */
                last_term = term_of[o]
            :: else
            fi
        :: else
        fi;
        i = 0;
        do
        :: i < NODES -> named[i] = 0; i++
        :: i >= NODES -> break
        od;
        i = 0; j = 0; same = 0; answers = 0; over_before = 0; o = 0
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
