// SPDX-License-Identifier: BSL-1.0
#include "help.hpp"

namespace redlock_cli {

// Keep lines within 80 columns. docs/cli.md quotes these texts; update both together.

const std::string_view main_help = R"help(NAME
    redlock - a distributed flock: run commands under a lock held on Redis

SYNOPSIS
    redlock run [OPTIONS] --nodes URL[,URL...] -k KEY [--] COMMAND [ARG...]
    redlock elect [OPTIONS] --nodes URL[,URL...] NAME PROPOSAL [[--] COMMAND...]
    redlock elect -l [OPTIONS] --nodes URL[,URL...] NAME
    redlock status [OPTIONS] --nodes URL[,URL...] KEY...
    redlock COMMAND --help
    redlock --help | --version

DESCRIPTION
    redlock does for jobs on many machines what flock(1) does for jobs on one
    machine: it runs a command while holding a lock, so that no two copies of
    the job run at once. The lock lives in Redis: on a single server, or, with
    the Redlock algorithm, on N independent Redis masters, where it is held
    while a majority of them (N/2 + 1) agree.

    run     Acquire the lock KEY, run COMMAND while holding it (extending it
            as long as COMMAND runs) and release it when COMMAND exits. If the
            lock is lost, COMMAND is stopped.

    elect   Campaign in the leader election NAME with the value PROPOSAL, and
            once leading run COMMAND as run does (or lead until SIGINT or
            SIGTERM); with -l, print the election's leader and each change.

    status  Show, for each node, who holds KEY and for how much longer.

    "redlock run --help", "redlock elect --help" and "redlock status --help"
    describe them in full.

OPTIONS
    -h, --help
        Show this text and exit.

    --version
        Show the version and exit.

NODE URLS
    redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]     (port 6379 and database 0
                                                    by default)
    rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB]    (the same over TLS)
    unix://[[USER]:PASSWORD@]/PATH/TO/SOCKET[?db=N]
    redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/NAME[?db=N]
                                 (the master the Sentinels call NAME; they
                                  listen on 26379 by default; the password
                                  is the master's; rediss-sentinel:// for TLS)
    redis-cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]
                                 (a whole Redis Cluster, reached through
                                  these seeds; rediss-cluster:// for TLS)

    In a list of URLs a comma followed by a scheme (redis://, ...) starts the
    next node; other commas separate a Sentinel URL's Sentinels or a cluster
    URL's seeds. IPv6 hosts go in brackets: redis://[::1]:6379. In a password,
    write "%" followed by two hex digits for characters that would end it
    early, such as "," (%2C), "@" (%40) or "/" (%2F). Passwords never appear
    in messages.

    A rediss:// node's certificate must chain to a trusted CA (the system's,
    or --tls-ca) and name the URL's host or IP address.

ENVIRONMENT
    REDLOCK_NODES
        The default for --nodes. It keeps passwords out of the command line
        that ps(1) shows to every user.

    REDLOCK_KEY_PREFIX
        The default for --key-prefix.

EXIT STATUS
    0      Success.
    64     Usage error: an unknown command or option, a malformed URL or
           duration, a missing argument. The message is one line.
    70     An internal error of redlock.
    The other statuses are those of the command: see "redlock run --help",
    "redlock elect --help" and "redlock status --help".

EXAMPLES
    Run a job on at most one host at a time:
        export REDLOCK_NODES=redis://r1:6379,redis://r2:6379,redis://r3:6379
        redlock run --key nightly-report -- /usr/local/bin/nightly-report

    See who holds that lock:
        redlock status nightly-report

    Run a scheduler on one host at a time, the others standing by:
        redlock elect scheduler "$(hostname)" -- /usr/local/bin/scheduler

SEE ALSO
    flock(1), docs/cli.md,
    https://redis.io/docs/manual/patterns/distributed-locks/
)help";

const std::string_view run_help = R"help(NAME
    redlock run - run a command while holding a distributed lock

SYNOPSIS
    redlock run [OPTIONS] --nodes URL[,URL...] -k KEY [--] COMMAND [ARG...]
    redlock run -s | -x | --permits N | --fair [OPTIONS] -k KEY [--] COMMAND...

DESCRIPTION
    Acquires the lock KEY on the nodes, runs COMMAND with its arguments
    (directly, not through a shell; COMMAND is looked up in PATH), waits for it
    to exit, releases the lock and exits with COMMAND's exit status.

    The lock is a Redis key, set on every node to a random owner value with a
    time to live (--expiry). It is held while a majority of the nodes
    (N/2 + 1) have it. While COMMAND runs, redlock extends the lock about every
    third of the expiry, so COMMAND may run for as long as it needs.

    The lock is lost when the extensions find the key gone from (or taken over
    on) so many nodes that no majority can have it any more, or when no
    majority confirms an extension before the lock's validity runs out (about
    one expiry after the last confirmed one). redlock then sends COMMAND the
    --signal, sends SIGKILL if COMMAND is still running --kill-after later, and
    exits with status 3 once COMMAND has ended.

    The lock is a read-write lock, as in flock(1): by default (or with -x) a
    run is its writer and holds it alone; any number of -s runs (readers)
    hold it together, and a run that waits for readers keeps new ones out.
    With --permits N it is a semaphore: up to N runs hold it at once. With
    --fair it is a fair lock: one holder at a time, granted in the order the
    runs began to wait. Each kind keeps its own format under KEY: give every
    run on one KEY the same kind (any of -s, -x and neither; or the same
    --permits N; or --fair). Runs of different kinds on one KEY never hold it
    together: a --fair run waits while others hold KEY, the others fail with
    status 69 while a run of another kind holds it.

    When the lock is busy, redlock waits for it as flock(1) does, trying
    again as soon as the holder releases it: for as long as it takes by
    default, up to --wait, or not at all with --nonblock. Nodes that cannot be
    reached are not a holder: once no majority of them has answered for a
    connect timeout (1 s) in a row, redlock stops waiting with exit status 69,
    within about two connect timeouts of the outage's start. A
    misconfiguration (see exit status 69) ends the wait at once.

    SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2 sent to redlock are
    passed on to COMMAND, and redlock keeps the lock until COMMAND has exited.
    A signal that was ignored when redlock started (as under nohup) stays
    ignored. If one of them arrives while redlock is still waiting for the
    lock, it stops waiting, removes what it had set, and exits with 128 plus
    the signal's number. A Ctrl-C at a terminal reaches both redlock and
    COMMAND, so COMMAND sees SIGINT twice unless it runs in a process group of
    its own (--process-group).

    COMMAND inherits redlock's standard input, output and error, its
    environment and the file descriptors it was started with.

OPTIONS
    --nodes URL[,URL...]
        The Redis nodes: one server, or N independent masters for the Redlock
        algorithm (3 or 5 are usual). May be given more than once. Defaults
        to $REDLOCK_NODES. See NODE URLS in "redlock --help".

    -k, --key KEY
        The lock's name: the Redis key, after the --key-prefix. Required.

    --key-prefix PREFIX
        Put PREFIX before KEY, as in --key-prefix locks: for the Redis key
        locks:KEY, to keep locks apart from other data in the same database
        (default $REDLOCK_KEY_PREFIX, else none). Every program that takes
        the lock must use the same prefix; in the library it is
        config::key_prefix.

    -s, --shared
        Take KEY as a reader of a read-write lock: other -s runs may hold it
        at the same time; a -x run may not.

    -x, --exclusive
        Take KEY as the writer of a read-write lock: no -s run and no other
        writer holds it meanwhile. While it waits for readers to leave, new -s
        runs are refused, so a stream of readers cannot starve it. This is
        the default.

    --permits N
        Take one of the N permits of the semaphore KEY (N >= 1): up to N runs
        hold it at once. Over several nodes a permit needs more than a
        majority of them when N > 1 (every node once N >= nodes - 1). Every
        run on KEY must give the same N: while holders with another N hold
        KEY, redlock exits with status 64 and names both numbers.

    --fair
        Take KEY as a fair lock: one holder at a time, and the runs that wait
        get it in the order they began to wait (first come, first served),
        across hosts. A run keeps its place in the queue for its whole wait;
        one that stops waiting (--wait, a signal, an outage) leaves it at
        once. With -n it succeeds only when KEY is free and nobody waits. Not
        with -s or --permits.

    --expiry DUR
        The key's time to live (default 30s). If redlock dies without
        releasing the lock (SIGKILL, a crashed host), the lock frees itself
        after at most this long.

    -w, --wait SECONDS | DUR | forever
        How long to wait for the lock: a number of seconds as for flock -w
        (10, 0.5), a DUR, or forever (the default). -w 0 is --nonblock.

    -n, --nonblock
        Make a single attempt: if the lock is busy, fail at once with exit
        status 1 (or --conflict-exit-code).

    -E, --conflict-exit-code N
        The exit status when the lock is busy (default 1), 0 to 255.

    --signal SIG
        The signal that stops COMMAND when the lock is lost: a name such as
        TERM, SIGTERM, INT, HUP or USR1, or a number (default TERM).

    --kill-after DUR
        Send SIGKILL this long after --signal if COMMAND is still running
        (default 10s; 0 sends it at once).

    --tls-ca FILE
        The CA certificates (PEM) that rediss:// nodes' certificates must
        chain to, instead of the system's.

    --tls-cert FILE, --tls-key FILE
        A client certificate chain and its private key (PEM), for servers that
        check their clients' certificates. Both or neither.

    --process-group
        Run COMMAND in a process group of its own and send the signals (the
        --signal, SIGKILL and the ones passed on) to the whole group, so that
        the processes a script starts are stopped with it. COMMAND cannot read
        from the terminal then.

    -q, --quiet
        Print nothing when the lock cannot be acquired (exit status 1, the
        --conflict-exit-code, or 69).

    -v, --verbose
        Report each step on standard error, with every node's answer when the
        lock cannot be acquired, is lost, or is released.

    -h, --help
        Show this text and exit.

    DUR is a number and a unit: 500ms, 10s, 1.5s, 2m, 1h. A number without a
    unit counts seconds.

EXIT STATUS
    N      COMMAND exited with status N.
    128+N  COMMAND was killed by signal N (137 for SIGKILL), or redlock was
           interrupted by signal N while waiting for the lock (130 for
           SIGINT).
    1      The lock is busy: another owner holds it (on a majority of the
           nodes, or on enough of them that no majority granted it within
           --wait). --conflict-exit-code changes this status.
    3      The lock was lost while COMMAND ran. COMMAND was stopped.
    64     Usage error. The message is one line. Also a --permits N that
           differs from the N of the semaphore's holders (the message names
           both numbers, and each node's answer follows).
    69     The nodes kept the lock from redlock, not another owner: no
           majority of them answered for a connect timeout (or within
           --wait), or too many are misconfigured (a wrong password, replicas
           or cluster nodes listed as masters, TLS on one side only). A
           misconfiguration ends the wait at once, and the message names each
           node's cause; otherwise --verbose adds every node's answer. Never
           the status of a busy lock, even with --quiet.
    70     An internal error of redlock.
    126    COMMAND was found but could not be run (not executable), as for
           env(1).
    127    COMMAND was not found.
    As with flock(1), COMMAND's own statuses may coincide with these; the
    message on standard error tells them apart.

EXAMPLES
    Run a job at most once at a time across three hosts, waiting for the
    lock as long as another copy runs:
        redlock run --nodes redis://r1,redis://r2,redis://r3 \
            --key backup -- /usr/local/bin/backup --full

    Skip this run if another copy holds the lock, with exit status 0:
        redlock run -n -E 0 -k report -- /usr/local/bin/report

    Wait up to two minutes for the lock, then run a shell script:
        redlock run -k deploy -w 120 -- sh -c 'make && make install'

    Let reports read a cache together while a refresh waits for them and
    then runs alone:
        redlock run -s -k cache -- ./report.sh
        redlock run -k cache -- ./refresh-cache.sh

    Let deployments from several hosts take turns in the order they came:
        redlock run --fair -k deploy -- ./deploy.sh

    Run at most four encoding jobs at once across the hosts:
        redlock run --permits 4 -k encoder -- ./encode.sh input.mkv

    Stop an import with SIGINT, and SIGKILL 30 s later, if the lock is lost:
        redlock run --key import --signal INT --kill-after 30s -- ./import.py
)help";

const std::string_view elect_help = R"help(NAME
    redlock elect - lead an election while a command runs, or follow it

SYNOPSIS
    redlock elect [OPTIONS] --nodes URL[,URL...] NAME PROPOSAL [[--] COMMAND...]
    redlock elect -l [OPTIONS] --nodes URL[,URL...] NAME

DESCRIPTION
    Campaigns in the leader election NAME with PROPOSAL as its value and,
    once leading, runs COMMAND as "redlock run" runs it under a lock: the
    leadership is kept (extended) while COMMAND runs, COMMAND is stopped if
    the leadership is lost (exit status 3), and redlock resigns when COMMAND
    exits and exits with its status. COMMAND finds its term in the
    environment variable REDLOCK_TERM. Without COMMAND, redlock leads until
    SIGINT or SIGTERM, then resigns and exits 0.

    An election is a fair lock on NAME whose holder, the leader, publishes a
    value that anyone may read (PROPOSAL: where the leader can be reached,
    say). Candidates lead one at a time, in the order they began to
    campaign; the others wait in line. Each leader's term is a number
    greater than every earlier leader's: pass it along with what the leader
    writes, so that a deposed leader's late writes can be refused.

    A candidate waits for its turn for as long as it takes by default, up
    to --wait, or makes one attempt with --nonblock. Nodes that cannot be
    reached end the wait as for "redlock run" (exit status 69). The signals
    that "redlock run" passes on to its command are passed on to COMMAND
    here too; one that arrives before COMMAND starts ends the campaign with
    128 plus its number. Without COMMAND, SIGHUP, SIGQUIT, SIGUSR1 and
    SIGUSR2 resign as SIGINT and SIGTERM do, but exit with 128 plus their
    number.

    With -l, redlock follows the election instead: it prints the leader at
    once and then each change, one line each on standard output, flushed:
    the term and the value, as in

        7 10.0.0.7:8080

    or "-" while nobody leads. In the value, bytes that are not printable
    are shown as \xNN and a backslash as \\. A resignation, a new leader or
    a new value shows within a few round trips; a leader that died shows
    gone once its leadership expired (its --expiry). Leaders that lead for
    less than a few round trips may be missed. It runs until SIGINT or
    SIGTERM, then exits 0.

OPTIONS
    --nodes URL[,URL...]
        The Redis nodes, as for "redlock run". May be given more than once.
        Defaults to $REDLOCK_NODES.

    -l, --listen
        Follow the election NAME: print its leader and each change. Takes
        the node options, -q and -v, and no PROPOSAL or COMMAND.

    --expiry DUR
        The leadership's time to live (default 30s): a leader that dies
        without resigning keeps the others waiting at most this long.

    -w, --wait SECONDS | DUR | forever
        How long to wait to lead (default forever); -w 0 is --nonblock.

    -n, --nonblock
        Make one attempt: lead only if nobody leads or waits in line, else
        exit with status 1 (or --conflict-exit-code) at once.

    -E, --conflict-exit-code N
        The exit status when another candidate kept redlock from leading
        within --wait (default 1), 0 to 255.

    --signal SIG, --kill-after DUR, --process-group
        How COMMAND is stopped when the leadership is lost, as for
        "redlock run".

    --key-prefix PREFIX, --tls-ca FILE, --tls-cert FILE, --tls-key FILE
        As for "redlock run"; every candidate and listener of NAME must use
        the same prefix.

    -q, --quiet
        Print nothing when redlock does not lead (exit status 1, the
        --conflict-exit-code, or 69), or when a listener loses the nodes.

    -v, --verbose
        Report each step on standard error, as "redlock run" does.

    -h, --help
        Show this text and exit.

EXIT STATUS
    N      COMMAND exited with status N.
    128+N  COMMAND was killed by signal N, or redlock got signal N before
           COMMAND started, or (without COMMAND) signal N other than SIGINT
           and SIGTERM ended the leadership.
    0      Without COMMAND: resigned on SIGINT or SIGTERM. With -l: stopped
           by SIGINT or SIGTERM.
    1      Another candidate kept redlock from leading within --wait (or
           -n). --conflict-exit-code changes this status.
    3      The leadership was lost. COMMAND, if any, was stopped.
    64     Usage error. The message is one line.
    69     The nodes kept redlock from leading, as for "redlock run"; with
           -l, no majority of the nodes answered for two connect timeouts.
    70     An internal error of redlock.
    126    COMMAND was found but could not be run (not executable).
    127    COMMAND was not found.

EXAMPLES
    Run a scheduler on one host at a time; the others stand by to take
    over when it ends or its host dies:
        redlock elect --nodes redis://r1,redis://r2,redis://r3 \
            scheduler "$(hostname):8080" -- /usr/local/bin/scheduler

    Lead from a shell script's background until it is stopped:
        redlock elect primary "$(hostname)" & leader=$!
        ...
        kill "$leader"

    Follow the election, one line per change:
        redlock elect -l scheduler | while read -r term value; do
            echo "leader: $value (term $term)"
        done
)help";

const std::string_view status_help = R"help(NAME
    redlock status - show who holds a distributed lock

SYNOPSIS
    redlock status [OPTIONS] --nodes URL[,URL...] KEY...

DESCRIPTION
    Reads each KEY on every node and prints a summary line for the key, then
    one line per node:

        backup: locked by lRwnUk0yp2VBFtoLTQ4U9Q== on 2 of 3 nodes (quorum 2)
          127.0.0.1:7001  held by lRwnUk0yp2VBFtoLTQ4U9Q==, ttl 28731 ms
          127.0.0.1:7002  held by lRwnUk0yp2VBFtoLTQ4U9Q==, ttl 28730 ms
          127.0.0.1:7003  error: no reply within 1000 ms

    A node's line says "free" when the key does not exist there; "held by
    VALUE, ttl N ms" for a lock, where VALUE is the random owner value its
    holder set (a reentrant lock adds its hold count: "VALUE (count 2)"); "not
    a lock" for a key of another type; or the error that kept the node from
    answering. For a read-write lock (redlock run -s or -x) it says "read by
    VALUE (ttl N ms), ...", "written by VALUE (ttl N ms)" and "a writer
    waiting: VALUE (ttl N ms)"; for a semaphore (--permits) "K of N permit(s)
    in use: VALUE (ttl N ms), ...": each entry expires on its own. A fair
    lock's line (--fair) ends with its queue in the order it is granted,
    "; queue: VALUE (ttl N ms), ...", where each waiter's entry expires unless
    the waiter refreshes it; "joining" marks one that has no ticket yet.

    The summary says "locked" when one owner holds a majority of the nodes;
    "free" when no node has the key; "unknown" when the nodes that could not
    be read might make up such a majority; and "not locked" otherwise (a lock
    being acquired, released or expiring). For a read-write lock it says
    "write-locked by VALUE" or "read-locked by N reader(s)" (and "a writer
    waiting"), for a semaphore "K of N permit(s) in use", counting the
    holders on a quorum of the nodes. For a fair lock it adds "; K waiting in
    line: VALUE, ..." for the waiters queued on a majority, next in line
    first. Bytes that are not printable are shown as \xNN.

    A replica's line begins "a replica of HOST:PORT, not a master:". A replica
    refuses lock writes, so its copy of the master's keys never counts towards
    the summary: list masters as nodes.

    status only reads, in one read-only script per node (TYPE, PTTL, INFO
    replication, then GET, HGETALL or ZRANGE, TIME, and a fair lock's queue):
    it never changes a lock.

OPTIONS
    --nodes URL[,URL...]
        The Redis nodes, as for "redlock run". May be given more than once.
        Defaults to $REDLOCK_NODES.

    --key KEY
        Another way to name a KEY. May be given more than once.

    --key-prefix PREFIX
        Put PREFIX before each KEY, as "redlock run" does (default
        $REDLOCK_KEY_PREFIX, else none). The summary line names the Redis key.

    --timeout DUR
        The limit for each node: connecting, authenticating and reading
        (default 1s).

    --tls-ca FILE, --tls-cert FILE, --tls-key FILE
        TLS for rediss:// nodes, as for "redlock run".

    -h, --help
        Show this text and exit.

EXIT STATUS
    0      Every node answered, whether the lock is held or free.
    1      At least one node could not be read; its line says why.
    64     Usage error. The message is one line.

EXAMPLES
    redlock status --nodes redis://r1,redis://r2,redis://r3 backup

    REDLOCK_NODES=unix:///run/redis/redis.sock redlock status backup deploy
)help";

}  // namespace redlock_cli
