/*
 * delayd — constant-delay engine for one direction of an emulated link (tcpprofile testbed).
 *
 * Packets stay in the kernel.  An iptables rule `-t raw -A PREROUTING -i IF -j NFQUEUE --queue-num Q`
 * in the *receiving* namespace of a hop hands every packet to NFQUEUE Q; this program receives only
 * metadata (the packet id and length), remembers when each packet arrived, and once a packet has
 * waited `delay` it tells the kernel to let it continue (NF_ACCEPT).  Ids are issued in arrival order
 * and every packet waits the same delay, so a FIFO of (id, due time) suffices and one *batch verdict*
 * ("accept every id <= N") releases all packets that are due at a wake-up.
 *
 * Why this design (measured on this kind of machine, see shared/notes/link-emulation-prototypes.md):
 *  - Holding packets on the sender's OUTPUT chain keeps them charged to the socket; TCP small queues
 *    then throttle the sender to 0.002-0.17 Gbit/s.  Holding them in the receiver's raw PREROUTING
 *    (after they crossed a veth and were orphaned) does not.
 *  - Metadata only: copy range 0 means "whole packet", so we ask for a small copy range (64 bytes).
 *  - NFQA_CFG_F_GSO: without it the kernel segments and checksums every GSO packet before queueing
 *    (ceiling 4.4 Gbit/s); with it GSO super-packets are queued whole.
 *  - Queue length: the default 1024 is far too small; 10 Gbit/s x 183 ms (one direction of 366 ms)
 *    holds ~150k packets of 1500 B.  The caller sizes --maxlen from the BDP.
 *  - Large netlink receive buffer (SO_RCVBUFFORCE) and recvmmsg(): a burst arrives faster than one
 *    recv per packet.  ENOBUFS on the socket means the kernel could not deliver a packet to us and
 *    dropped it: we count it and report it (the kernel's own count is queue_user_dropped).
 *  - One timer for the head of the FIFO (ppoll's timeout: one syscall per wake-up, cheaper than a
 *    timerfd that must be re-armed and read), one batch verdict per wake-up.
 *  - (Historical) Timer wake-ups were measured ~50 us late per direction; part of that is the default 50 us timer
 *    slack, which we set to 1 ns (PR_SET_TIMERSLACK).  Busy-polling the last 100 us was measured to
 *    gain little for up to a core of CPU, and at SCHED_FIFO would starve the machine: not done.
 *    The remaining, roughly constant lateness of a wake-up is absorbed here: the timer is aimed
 *    early by its running mean (see "Release timing"); the caller holds each direction tau/2 as
 *    configured and lowers nothing (testbed/calibrate.py).
 *  - With other processes competing for the 2 cores, wake-ups were late by 0.7-1.9 ms on average
 *    (load 4-7); --rt-priority runs the engine SCHED_FIFO so that the emulated wire does not wait for
 *    the CPU (the kernel's RT throttling still leaves 5 % to everything else).  --turns (issue 21),
 *    for both directions' engines SCHED_FIFO at one priority on one CPU: neither preempts the other;
 *    a wake-up that would not sleep yields first (sched_yield), so they take turns one batch each, as
 *    one engine serving both directions would; the timer is aimed early by at most G/2 while
 *    coalescing and learns only from real sleeps; what is due is released before the drain.  Without
 *    it a FIFO engine whose learnt lateness reached G never slept and starved the other one for
 *    milliseconds (see "Release timing").  Without --turns the timing is as before issue 21.
 *  - The caller raises the IPv4 GSO size of the link's devices (BIG TCP, up to 400 kB) when
 *    offloads are on: 2-4x fewer packets through this program and the stacks (measured: engine CPU
 *    halved, 10 Gbit/s at 45.6 ms reached under load where 64 KiB GSO did not).
 *  - Signals are blocked except inside ppoll(), so a SIGTERM can never be missed between the loop
 *    test and the sleep.
 *  - Released packets continue through the receiver's stack inside our verdict call, so our CPU time
 *    includes part of the receiver's TCP processing.
 *
 *
 * The bottleneck (--rate-bps C, --buffer-bytes beta): the forward engine also models the link's
 * serialisation and its drop-tail buffer, so that no router namespace, extra veth hop or qdisc sits
 * in the path (measured per packet at MTU 9000, 45.6 ms: three namespaces with tbf 6.9 Gbit/s, the
 * same path without the NFQUEUE rules 11.7; see docs/testbed.md for the budget).  A packet of L IP
 * bytes carrying s segments (GSO: s = ceil((L - 52) / MSS)) occupies the wire for
 *     wire = (L - 52) + s * (52 + 38) bytes  ->  8 * wire / C seconds        (C: Ethernet line rate;
 * 52 B IPv4+TCP+timestamps per segment, 38 B Ethernet header, FCS, preamble and gap per frame).
 * It starts when the wire is free, start = max(arrival, previous end), and arrives after the
 * propagation delay: due = end + delay.  Drop-tail: a packet is dropped (NF_DROP verdict) when the
 * bytes still waiting for the wire, (previous end - arrival) * C / 8, plus its own exceed beta.
 * Due times stay in arrival order, so the FIFO and batch verdicts still hold.
 *
 * Arrival times: the kernel's (NFQA_TIMESTAMP, taken when the packet was queued; we switch kernel
 * receive timestamps on with SO_TIMESTAMPNS on a socket of ours), so they do not depend on when we
 * wake.  Packets without one are stamped at the drain (interpolated over the coalescing interval).
 * Measured under load (10 Gbit/s, MTU 9000, per packet): TCP's base RTT within 0.02 ms of tau; with
 * wake-up stamps and the old idle-ping compensation it read 0.1-0.8 ms below.
 *
 * Release timing: every wake-up releases what is due within --granularity-ns / 2 from now (each
 * packet has its own due time once serialisation is modelled; one wake-up per packet would cost a
 * syscall each), and the timer is set that much plus the running mean of the measured wake-up
 * lateness early, so releases centre on their due times under any load (lateness is reported
 * signed: negative = early).  With --turns it is aimed early by at most G/2 while coalescing: a learnt
 * lateness of G or more put the target before the last wake-up, ppoll got no timeout and the engine
 * never slept (measured, both engines FIFO: the other one waited 31-49 % of a run, releases up to
 * 39 ms late).
 *
 * The loss stage (--loss-every N | --loss-rate P): a packet can be lost *before* the bottleneck, so a
 * lost packet never occupies the modelled buffer (an NF_DROP verdict at once).  Periodic: every N-th
 * packet the stage sees (the N-th, 2N-th, ...: the phase of iptables `statistic --mode nth --every N
 * --packet 0`, whose rule this replaces; the count runs on across runs).  Uniform: each packet is lost
 * when u < P, u uniform in [0, 1) from splitmix64 (Steele, Lea, Flood 2014), reseeded by the stdin
 * command "seed S" (the caller derives S from the run id and stores it).  The stage starts off
 * (calibration measures the wire) and is switched by "loss on" / "loss off"; while off it neither
 * counts nor drops.  Counted: loss_seen (packets the stage saw while on) and loss_dropped.
 *
 * Lateness distribution: besides the sum and extremes, each period keeps a histogram of release
 * lateness in log-spaced buckets (4 per octave of 256 ns units; LATE_BUCKETS), printed as
 * "period_late_hist" and reset with the period, so that the caller can read p99 / p99.9, not only
 * the mean.
 *
 * Stall injection (--stall-every-ns P --stall-hold-ns D, issue 33; off by default): a fault
 * injection control that makes this direction's wire stall on purpose, so that what a stall costs
 * can be measured (benchmarks/stall_dose.py).  The holds start at the CLOCK_MONOTONIC instants that
 * are whole multiples of P (so that both directions' engines, given the same P, hold together), and
 * last D < P: during a hold no packet is released; what fell due in it goes out at its end, in order
 * (one batch verdict, the FIFO is untouched), and its lateness is recorded like any other.  Arrivals
 * are still drained and stamped during a hold.  Counted: stall_holds, the holds that deferred at
 * least one release.
 *
 * Stall episodes (the record behind fidelity.stall_effect_bound, issue 33): how long the emulated
 * wire delivered nothing that it should have.  A batch released at `now` whose first packet (the
 * longest due) fell due at h, after the previous batch at t1, adds now - max(h, t1): between t1
 * and now the receiver should have had everything due from h on, and got nothing (a packet due
 * before t1 but released only now was not yet drained at t1: its wait lies in an interval already
 * counted, so it is not counted twice).  Where that is above EPISODE_NS the batch is an episode:
 * counted (late_episodes) and its excess summed (late_excess_ns), cumulatively.
 *
 * Uncovered excess (late_uncovered_ns, fidelity.stall_effect_bound): the part of an episode's excess
 * the bottleneck's queue did not cover.  A stall of e stops the ACK clock for e; the sender then
 * sends nothing new, and the modelled wire (the forward engine's rate model) keeps serving its
 * backlog q for q/C before it idles: the wire loses max(0, e - q/C), which is what a stall costs Θ
 * (benchmarks/stall_dose.py measured the cost following D - beta/C with a full queue).  q/C is read
 * as the wire's busy time ahead (wire_free - from) at the previous release, before the episode began
 * (arrivals since then would only add to it, so it is not over-counted).  The forward engine reads
 * its own wire; the reverse engine (ACKs, no rate model) reads the forward engine's, published in a
 * shared page (--wire-publish FD in the forward engine, --wire-cover FD in the reverse one, the
 * same memfd); without either, nothing covers: the uncovered excess is the whole excess.
 *
 * Verdict thread (--verdict-cpu CPU, issue 33 item 6; docs/testbed.md, "The four-core plan"): the
 * packets a verdict releases continue through the receiving stack inside the verdict's sendto()
 * (nfqnl_recv_verdict_batch -> nf_reinject, net/netfilter/nfnetlink_queue.c), so whoever issues the
 * verdict pays for that TCP work.  With the option the main thread (timing: drain, wire model, release
 * decisions) hands each batch verdict's last id through a single-producer/single-consumer ring to a
 * thread pinned to CPU, which issues the verdicts in the order they were decided on the same netlink
 * socket (the kernel checks the socket's portid, not the thread); the stack work then runs on CPU.
 * No syscall per hand-off: the thread sleeps on a futex only when the ring is empty, and the producer
 * wakes it only if it sleeps.  --verdict-rt-priority P runs the thread SCHED_FIFO P (the releases, and
 * the stack work in them, then do not wait behind the applications on its CPU; it blocks whenever the
 * ring is empty, so it never spins at that priority); without it the thread inherits the engine's policy.  Drops (the loss stage, drop-tail) stay in the main thread: a drop of id k
 * is sent before any batch covering an id > k is decided, so the kernel never accepts a packet meant to
 * be dropped (a batch accepts every queued id <= N).  Counted by the thread (cumulative): verdict_batches
 * and the hand-off lag (decision to verdict sent): verdict_lag_sum_ns, verdict_lag_max_ns and
 * verdict_lag_hist (late_bucket's buckets).  Releases are decided early by the running mean of that
 * lag (handoff_ns; as the timer is aimed early by its usual lateness), kept apart for a consumer that
 * slept at the push (a futex wake-up on another CPU: tens of us) and one awake, and their lateness is recorded
 * at the expected send time (decision + mean lag): a release's true lateness differs from the recorded
 * one by its batch's lag minus the mean, which verdict_lag_hist bounds.  Without the option delayd
 * issues every verdict itself, exactly as before (handoff_ns is 0).
 *
 * Interface:
 *   delayd --queue Q --delay-ns D [--rate-bps C --buffer-bytes B --mss M] [--granularity-ns G]
 *          [--loss-every N | --loss-rate P] [--maxlen M] [--copy-range B] [--rcvbuf BYTES]
 *          [--rt-priority P] [--turns] [--stall-every-ns P --stall-hold-ns D] [--control-stdin]
 *          [--wire-publish FD | --wire-cover FD] [--verdict-cpu CPU [--verdict-rt-priority P]]
 *   stdout: "ready queue=Q ..." once bound; "stats {json}" on exit, on SIGUSR1 and on the stdin
 *   command "stats"; "period {json}" (the same counters, then the period's lateness extremes are
 *   reset) on the stdin command "period".  stdin commands (with --control-stdin): "delay NS",
 *   "stats", "period", "loss on", "loss off", "seed S", "stall P D" (stall injection: every P ns hold
 *   D ns; "stall 0 0": off), "quit"; end of stdin (the controlling process died) also ends the program.
 *   SIGTERM/SIGINT: accept everything still held, unbind the queue, print stats, exit 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libmnl/libmnl.h>
#include <linux/futex.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VLEN 256           /* datagrams per recvmmsg() */
#define MSGBUF 256         /* one queued-packet message with a 1-byte copy is ~120 bytes */
#define DRAIN_ROUNDS 16    /* recvmmsg() calls per wake-up before looking at the clock again */
#define SEG_HEADERS 52     /* IPv4 20 + TCP 20 + timestamps 12 bytes per segment */
#define WIRE_OVERHEAD 38   /* Ethernet header 14 + FCS 4 + preamble 8 + inter-frame gap 12 */
#define LATE_EWMA_SHIFT 6  /* running mean of wake-up lateness: weight 1/64 per wake-up */
#define LATE_COMP_MAX_NS 200000
#define STALL_NS 1000000  /* stall log: a timer wake-up or one loop's work later/longer than this */
#define STALL_LOG 32       /* stall log: the last this many stalls of the period */
#define LATE_BUCKETS 100   /* lateness histogram: bucket of x = late_ns >> 8, 4 per octave (late_bucket) */
#define EPISODE_NS 500000  /* stall episode: a batch's head later than 0.5 ms (fidelity.Thresholds.stall_ms) */
#define VRING 65536        /* verdict ring: batch verdicts decided but not yet sent (a power of two) */

struct held { uint32_t id; uint32_t len; uint64_t due; };

static struct {
	unsigned queue, copy_range, rt_priority, mss;
	uint32_t maxlen;
	uint64_t delay_ns, granularity_ns, buffer_bytes;
	double rate_bps;
	int rcvbuf, control_stdin;
	int turns;                   /* --turns: share the CPU with an equal-priority FIFO engine (see main) */
	uint64_t loss_every;         /* periodic loss: every N-th packet (0: not periodic) */
	double loss_rate;            /* uniform loss: probability per packet (0: not uniform) */
	uint64_t stall_every_ns, stall_hold_ns;  /* stall injection: hold D every P (0: off) */
	int wire_publish_fd, wire_cover_fd;      /* the shared page of "Uncovered excess" (-1: none) */
	int verdict_cpu;                         /* --verdict-cpu: the verdict thread's CPU (-1: no thread) */
	unsigned verdict_rt_priority;            /* --verdict-rt-priority: its SCHED_FIFO priority (0: inherit) */
} opt = { .copy_range = 1, .maxlen = 1u << 16, .rcvbuf = 256 << 20, .granularity_ns = 40000,
	  .mss = 1448, .wire_publish_fd = -1, .wire_cover_fd = -1, .verdict_cpu = -1 };

static struct {
	uint64_t packets, bytes, released, max_held, enobufs, nl_errors, ring_full, wakeups;
	uint64_t bottleneck_drops, bottleneck_bytes, wire_bytes, overlimits, kernel_stamped;
	int64_t late_sum_ns, late_max_ns, late_min_ns, period_late_max_ns, period_late_min_ns;
	int64_t wake_late_ewma_ns;
	uint64_t loss_seen, loss_dropped, period_late_hist[LATE_BUCKETS];
	uint64_t stalls;             /* stall-log events this period (wake-ups late, or work long, by > STALL_NS) */
	uint64_t stall_holds;        /* injected holds that deferred at least one release (cumulative) */
	uint64_t late_episodes;      /* batches whose head was later than EPISODE_NS (cumulative) */
	uint64_t late_excess_ns;     /* their summed excess: time the wire fell behind (see "Stall episodes") */
	uint64_t late_uncovered_ns;  /* the part of it the bottleneck's queue did not cover ("Uncovered excess") */
	uint64_t last_release_ns;    /* when the previous batch was released */
	uint64_t cover_wire_free_ns; /* the forward wire's wire_free at that release */
} st = { .late_max_ns = INT64_MIN, .late_min_ns = INT64_MAX, .period_late_max_ns = INT64_MIN,
	 .period_late_min_ns = INT64_MAX };

static uint64_t real_minus_mono_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC, refreshed per drain */
static uint64_t drained_at;          /* CLOCK_MONOTONIC of the current drain */
static uint64_t wire_free_ns;        /* when the modelled wire finishes the last accepted packet */
static uint64_t *shared_wire_free;   /* the shared page's one word: the forward wire's wire_free_ns */

static struct held *ring;            /* FIFO of held packets, capacity opt.maxlen */
static uint32_t head, count;
static struct mnl_socket *nl;
static unsigned portid;
static volatile sig_atomic_t stop, want_stats;
static int loss_on;                  /* the loss stage is switched on ("loss on") */
static uint64_t loss_phase;          /* packets seen since the last periodic drop */
static uint64_t rng_state, loss_seed; /* splitmix64 state and the seed it started from */

/* Stall log (diagnosis of releases that left milliseconds late, issue 21): a timer wake-up later
 * than STALL_NS ('s': the sleep overran: the task was not run when its timer fired) or one loop
 * iteration's work longer than STALL_NS ('w': draining and verdicts took that long, e.g. receiver
 * stack work inside a verdict, or preemption while working), with the packets held, and the
 * process's involuntary / voluntary context switches and CPU time at that moment (getrusage: only
 * when a stall is logged). */
static struct stall { uint64_t at_ns, dur_ns, nivcsw, nvcsw, cpu_us; uint32_t held; char kind; }
	stall_log[STALL_LOG];

static void log_stall(char kind, uint64_t at, uint64_t dur)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	stall_log[st.stalls % STALL_LOG] = (struct stall){ at, dur, (uint64_t)ru.ru_nivcsw, (uint64_t)ru.ru_nvcsw,
		(uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u + ru.ru_utime.tv_usec
		+ ru.ru_stime.tv_usec, count, kind };
	st.stalls++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void on_signal(int sig) { if (sig == SIGUSR1) want_stats = 1; else stop = 1; }

static void die(const char *what) { perror(what); exit(1); }

/* Every nfnetlink message: nlmsghdr, then struct nfgenmsg {family, version, res_id = queue (BE)}. */
static struct nlmsghdr *put_header(char *buf, int type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	struct nfgenmsg *nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(opt.queue);
	return nlh;
}

/* Send a config request (NFQNL_MSG_CONFIG) and wait for the kernel's acknowledgement. */
static int send_config(struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = (unsigned)now_ns();
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	int n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0)
		return -1;
	return mnl_cb_run(buf, n, nlh->nlmsg_seq, portid, NULL, NULL);
}

static void bind_queue(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = put_header(buf, NFQNL_MSG_CONFIG, 0);
	struct nfqnl_msg_config_cmd cmd = { .command = NFQNL_CFG_CMD_BIND };
	mnl_attr_put(nlh, NFQA_CFG_CMD, sizeof(cmd), &cmd);
	if (send_config(nlh) < 0)
		die("bind queue (is another program bound to it?)");

	/* Copy only the first copy_range bytes; queue length; keep GSO packets whole. */
	nlh = put_header(buf, NFQNL_MSG_CONFIG, 0);
	struct nfqnl_msg_config_params params = {
		.copy_range = htonl(opt.copy_range), .copy_mode = NFQNL_COPY_PACKET };
	mnl_attr_put(nlh, NFQA_CFG_PARAMS, sizeof(params), &params);
	mnl_attr_put_u32(nlh, NFQA_CFG_QUEUE_MAXLEN, htonl(opt.maxlen));
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
	if (send_config(nlh) < 0)
		die("configure queue");
}

static void unbind_queue(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = put_header(buf, NFQNL_MSG_CONFIG, 0);
	struct nfqnl_msg_config_cmd cmd = { .command = NFQNL_CFG_CMD_UNBIND };
	mnl_attr_put(nlh, NFQA_CFG_CMD, sizeof(cmd), &cmd);
	send_config(nlh);
}

/* NFQNL_MSG_VERDICT_BATCH: the kernel applies the verdict to every queued id <= the given id;
 * NFQNL_MSG_VERDICT: to that id only. */
static void verdict(int type, uint32_t id, uint32_t what)
{
	char buf[128];
	struct nlmsghdr *nlh = put_header(buf, type, 0);
	struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(what), .id = htonl(id) };
	mnl_attr_put(nlh, NFQA_VERDICT_HDR, sizeof(vh), &vh);
	while (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
			die("send verdict");
	}
}

/* splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014). */
static uint64_t splitmix64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The loss stage's verdict for the next packet it sees: 1 = lose it. */
static int loss_drops(void)
{
	if (!loss_on || (!opt.loss_every && opt.loss_rate <= 0))
		return 0;
	st.loss_seen++;
	int lost;
	if (opt.loss_every) {                 /* xt_statistic nth, --packet 0: the N-th, 2N-th, ... packet */
		lost = ++loss_phase == opt.loss_every;
		if (lost)
			loss_phase = 0;
	} else {                              /* u in [0, 1) from the top 53 bits */
		lost = (double)(splitmix64() >> 11) * 0x1.0p-53 < opt.loss_rate;
	}
	st.loss_dropped += lost;
	return lost;
}

/* Histogram bucket of a lateness: x = late >> 8 (256 ns units); x < 4: bucket x; else octave
 * o = floor(log2 x) and the next two bits: 4 buckets per octave (each 1/8-1/4 of its value wide). */
static unsigned late_bucket(int64_t late)
{
	if (late < 0)
		return 0;
	uint64_t x = (uint64_t)late >> 8;
	if (x < 4)
		return (unsigned)x;
	unsigned o = 63 - __builtin_clzll(x);
	unsigned b = 4 * (o - 1) + (unsigned)((x >> (o - 2)) & 3);
	return b < LATE_BUCKETS ? b : LATE_BUCKETS - 1;
}

static void note_late(int64_t late)
{
	st.period_late_hist[late_bucket(late)]++;
	st.late_sum_ns += late;
	if (late > st.late_max_ns) st.late_max_ns = late;
	if (late < st.late_min_ns) st.late_min_ns = late;
	if (late > st.period_late_max_ns) st.period_late_max_ns = late;
	if (late < st.period_late_min_ns) st.period_late_min_ns = late;
}

/* Verdict thread (the header's "Verdict thread"): a single-producer (main thread) / single-consumer
 * (verdict thread) ring of batch verdicts, in the order they were decided. */
struct vslot { uint32_t last, asleep; uint64_t decided_ns; };  /* asleep: the consumer slept at the push */
static struct vslot *vring;
static uint64_t vr_head, vr_tail;    /* next slot to fill (producer) / to send (consumer) */
static uint32_t vr_seq;              /* futex word: bumped after every push and at stop */
static int vr_waiting, vr_stop;      /* the consumer sleeps on vr_seq / the producer is done */
static uint64_t vr_full;             /* pushes that found the ring full (the producer waited) */
static struct { uint64_t batches, lag_sum_ns, lag_max_ns, hist[LATE_BUCKETS]; } vst;  /* written by the consumer */
static int64_t vlag_ewma_ns[2];      /* running mean of the hand-off lag, consumer awake / asleep at the
				      * push (a futex wake-up takes longer): consumer writes, producer reads */
static pthread_t vthread;

static long futex(uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);    /* futex(2) */
}

static void vst_add(uint64_t *counter, uint64_t n)      /* single writer, read by print_stats */
{
	__atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

static void *verdict_thread(void *unused)
{
	(void)unused;
	for (;;) {
		/* vr_stop before vr_head: the producer's last pushes come before its vr_stop, so once stopping
		 * is seen the head read after it holds them, and nothing decided is left unsent. */
		int stopping = __atomic_load_n(&vr_stop, __ATOMIC_SEQ_CST);
		uint32_t seq = __atomic_load_n(&vr_seq, __ATOMIC_SEQ_CST);
		uint64_t tail = vr_tail, head = __atomic_load_n(&vr_head, __ATOMIC_SEQ_CST);
		if (tail != head) {
			for (; tail != head; tail++) {
				struct vslot v = vring[tail % VRING];
				uint64_t lag = now_ns() - v.decided_ns;              /* decision -> verdict sent */
				verdict(NFQNL_MSG_VERDICT_BATCH, v.last, NF_ACCEPT);  /* the stack's work runs here */
				vst_add(&vst.batches, 1);
				vst_add(&vst.lag_sum_ns, lag);
				vst_add(&vst.hist[late_bucket((int64_t)lag)], 1);
				if (lag > vst.lag_max_ns)
					__atomic_store_n(&vst.lag_max_ns, lag, __ATOMIC_RELAXED);
				int64_t l = lag > LATE_COMP_MAX_NS ? LATE_COMP_MAX_NS : (int64_t)lag, *e = &vlag_ewma_ns[v.asleep];
				__atomic_store_n(e, *e + ((l - *e) >> LATE_EWMA_SHIFT), __ATOMIC_RELAXED);
				__atomic_store_n(&vr_tail, tail + 1, __ATOMIC_SEQ_CST);
			}
			continue;
		}
		if (stopping)
			return NULL;                 /* stopped, and everything decided was sent */
		/* Sleep unless a push came after the check above.  The producer stores vr_head, bumps vr_seq,
		 * then reads vr_waiting; we store vr_waiting, then read vr_head (both sequentially
		 * consistent): one of us sees the other.  A bump after `seq` was read fails the wait (EAGAIN). */
		__atomic_store_n(&vr_waiting, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&vr_head, __ATOMIC_SEQ_CST) == tail && !__atomic_load_n(&vr_stop, __ATOMIC_SEQ_CST))
			futex(&vr_seq, FUTEX_WAIT_PRIVATE, seq);
		__atomic_store_n(&vr_waiting, 0, __ATOMIC_SEQ_CST);
	}
}

static void vr_signal(void)
{
	__atomic_add_fetch(&vr_seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&vr_waiting, __ATOMIC_SEQ_CST))
		futex(&vr_seq, FUTEX_WAKE_PRIVATE, 1);
}

static void push_verdict(uint32_t last)
{
	if (vr_head - __atomic_load_n(&vr_tail, __ATOMIC_SEQ_CST) == VRING) {
		vr_full++;
		while (vr_head - __atomic_load_n(&vr_tail, __ATOMIC_SEQ_CST) == VRING)
			sched_yield();           /* the consumer is 65536 batches behind: wait for it */
	}
	vring[vr_head % VRING] = (struct vslot){ last, (uint32_t)__atomic_load_n(&vr_waiting, __ATOMIC_SEQ_CST), now_ns() };
	__atomic_store_n(&vr_head, vr_head + 1, __ATOMIC_SEQ_CST);
	vr_signal();
}

static void start_verdict_thread(void)
{
	vring = calloc(VRING, sizeof(*vring));
	if (!vring)
		die("calloc verdict ring");
	pthread_attr_t attr;
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(opt.verdict_cpu, &cpus);
	pthread_attr_init(&attr);      /* inherits our blocked signals, and our policy unless --verdict-rt-priority */
	int err = pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	if (!err && opt.verdict_rt_priority) {  /* the wire's releases should not wait behind the applications */
		struct sched_param sp = { .sched_priority = (int)opt.verdict_rt_priority };
		err = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		if (!err) err = pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		if (!err) err = pthread_attr_setschedparam(&attr, &sp);
	}
	if (!err)
		err = pthread_create(&vthread, &attr, verdict_thread, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		errno = err;
		die("verdict thread (--verdict-cpu)");
	}
}

static void stop_verdict_thread(void)
{
	if (!vring)
		return;
	__atomic_store_n(&vr_stop, 1, __ATOMIC_SEQ_CST);
	vr_signal();
	pthread_join(vthread, NULL);       /* it sends everything still in the ring first */
}

/* The hand-off's usual lag (0 without a verdict thread): releases are decided that much early, like
 * the timer's usual lateness, so that verdicts centre on their due times. */
static uint64_t handoff_ns(void)
{
	if (!vring)
		return 0;
	int asleep = __atomic_load_n(&vr_waiting, __ATOMIC_SEQ_CST);   /* as the push will find it */
	return (uint64_t)__atomic_load_n(&vlag_ewma_ns[asleep], __ATOMIC_RELAXED);
}

/* A batch verdict accepting every queued id <= last: sent here, or handed to the verdict thread. */
static void release_verdict(uint32_t last)
{
	if (vring)
		push_verdict(last);
	else
		verdict(NFQNL_MSG_VERDICT_BATCH, last, NF_ACCEPT);
}

/* When the next timer wake-up is due (0: none, sleep on the socket): one granularity G after the last
 * wake-up while coalescing, else G/2 before the head's due time, so that the release at that wake-up
 * (everything due by now + G/2) takes the head. */
static uint64_t wake_target(int coalescing, uint64_t last_wake, uint64_t g)
{
	if (coalescing)
		return last_wake + g;
	if (count)
		return ring[head].due > g / 2 ? ring[head].due - g / 2 : 1;
	return 0;
}

/* Stall injection: whether `t` lies in a hold ([k·P, k·P + D) of CLOCK_MONOTONIC, k >= 1), and when
 * the hold that holds t ends. */
static int in_hold(uint64_t t)
{
	return opt.stall_every_ns && t >= opt.stall_every_ns && t % opt.stall_every_ns < opt.stall_hold_ns;
}

static uint64_t hold_end(uint64_t t)
{
	return t - t % opt.stall_every_ns + opt.stall_hold_ns;
}

/* A hold that defers a release is counted once (stall_holds), whether the engine was awake in it or
 * slept through it to its end (past_hold: with both directions held nothing arrives to wake it). */
static void count_hold(uint64_t end)
{
	static uint64_t counted;             /* end of the last hold counted */
	if (counted != end) {
		counted = end;
		st.stall_holds++;
	}
}

/* A release timer that falls in a hold moves to the hold's end (nothing can be released before), plus
 * the learnt wake-up lateness that the caller aims early by: the wake-up then comes at the end, not
 * repeatedly just before it.  The head is then deferred by the hold: it counts. */
static uint64_t past_hold(uint64_t target)
{
	if (!target || !in_hold(target))
		return target;
	if (count && ring[head].due < hold_end(target))      /* due inside the hold, not just after it */
		count_hold(hold_end(target));
	return hold_end(target) + (uint64_t)st.wake_late_ewma_ns;
}

/* The forward wire's wire_free_ns: our own with a rate model, else the published one, else 0. */
static uint64_t cover_wire_free(void)
{
	if (opt.rate_bps > 0)
		return wire_free_ns;
	return shared_wire_free ? __atomic_load_n(shared_wire_free, __ATOMIC_RELAXED) : 0;
}

/* Release, in one batch verdict, every held packet due by `horizon` (lateness measured at `now`). */
static void release_due(uint64_t now, uint64_t horizon, int all)
{
	uint32_t n = 0, last = 0;
	while (n < count) {
		struct held *h = &ring[(head + n) % opt.maxlen];
		if (!all && h->due > horizon)
			break;
		if (!all) {
			note_late((int64_t)(now - h->due));
			uint64_t from = h->due > st.last_release_ns ? h->due : st.last_release_ns;
			if (!n && now > from + EPISODE_NS) {    /* the head: the batch's longest-due packet */
				uint64_t excess = now - from;
				uint64_t cover = st.cover_wire_free_ns > from ? st.cover_wire_free_ns - from : 0;
				st.late_episodes++;
				st.late_excess_ns += excess;
				st.late_uncovered_ns += excess > cover ? excess - cover : 0;  /* max(0, e - q/C) */
			}
		}
		last = h->id;
		n++;
	}
	if (!n)
		return;
	if (!all) {
		st.last_release_ns = now;
		st.cover_wire_free_ns = cover_wire_free();
	}
	release_verdict(last);
	head = (head + n) % opt.maxlen;
	count -= n;
	st.released += n;
}

/* A wake-up's release: what is due by now + G/2, unless an injected hold is on (it is then deferred
 * to the hold's end; a hold that defers something is counted once). */
static void release_now(uint64_t now, uint64_t g)
{
	if (in_hold(now)) {
		if (count && ring[head].due <= now + g / 2)
			count_hold(hold_end(now));
		return;
	}
	uint64_t sent = now + handoff_ns();     /* when the verdict is expected to be sent */
	release_due(sent, sent + g / 2, 0);
}

/* The release rule: when a packet of `len` IP bytes that arrived at `arrived` [ns] is due to leave,
 * or DROPPED.  Without a bottleneck: delay after arrival.  With one (the header's "bottleneck"):
 * serialised at C once the wire is free, then the delay; dropped when the bytes still waiting for
 * the wire plus its own exceed beta (drop-tail).  Advances the modelled wire. */
#define DROPPED UINT64_MAX
static uint64_t bottleneck_due(uint64_t len, int gso, uint64_t arrived)
{
	if (opt.rate_bps <= 0)
		return arrived + opt.delay_ns;
	/* Segments of a GSO packet: each carries SEG_HEADERS and is framed on the wire. */
	uint64_t segs = 1;
	if (gso && len > SEG_HEADERS + opt.mss)
		segs = (len - SEG_HEADERS + opt.mss - 1) / opt.mss;
	uint64_t wire = len + (segs - 1) * SEG_HEADERS + segs * WIRE_OVERHEAD;      /* bytes */
	uint64_t backlog = wire_free_ns > arrived                                   /* bytes */
		? (uint64_t)((wire_free_ns - arrived) * opt.rate_bps / 8e9) : 0;
	if (backlog + wire > opt.buffer_bytes)      /* drop-tail: the buffer cannot take it */
		return DROPPED;
	if (wire_free_ns > arrived)
		st.overlimits++;                        /* found the wire busy: queued */
	uint64_t start = wire_free_ns > arrived ? wire_free_ns : arrived;
	wire_free_ns = start + (uint64_t)(wire * 8e9 / opt.rate_bps);   /* ns: 8·wire / C */
	if (shared_wire_free)
		__atomic_store_n(shared_wire_free, wire_free_ns, __ATOMIC_RELAXED);
	st.wire_bytes += wire;
	return wire_free_ns + opt.delay_ns;         /* last bit on the wire, then propagation */
}

/* One queued packet: NFQA_PACKET_HDR carries the id; NFQA_CAP_LEN the full length when the copy
 * was truncated (else the payload length is the packet length). */
static void on_packet(const struct nlmsghdr *nlh, uint64_t arrived)
{
	struct nlattr *a;
	uint32_t id = 0, len = 0, caplen = 0, skbinfo = 0;
	int have_id = 0;
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		switch (mnl_attr_get_type(a)) {
		case NFQA_PACKET_HDR: {
			const struct nfqnl_msg_packet_hdr *ph = mnl_attr_get_payload(a);
			id = ntohl(ph->packet_id);
			have_id = 1;
			break;
		}
		case NFQA_PAYLOAD: len = mnl_attr_get_payload_len(a); break;
		case NFQA_CAP_LEN: caplen = ntohl(mnl_attr_get_u32(a)); break;
		case NFQA_SKB_INFO: skbinfo = ntohl(mnl_attr_get_u32(a)); break;
		case NFQA_TIMESTAMP: {
			const struct nfqnl_msg_packet_timestamp *ts = mnl_attr_get_payload(a);
			uint64_t real = be64toh(ts->sec) * 1000000000ull + be64toh(ts->usec) * 1000ull;
			if (real > real_minus_mono_ns && real - real_minus_mono_ns <= drained_at) {
				arrived = real - real_minus_mono_ns;   /* the kernel's stamp: when it was queued */
				st.kernel_stamped++;
			}
			break;
		}
		}
	}
	if (!have_id)
		return;
	len = caplen ? caplen : len;
	st.packets++;
	st.bytes += len;
	if (loss_drops()) {                 /* lost before the bottleneck: never occupies the buffer */
		verdict(NFQNL_MSG_VERDICT, id, NF_DROP);
		return;
	}
	uint64_t due = bottleneck_due(len, (skbinfo & NFQA_SKB_GSO) != 0, arrived);
	if (due == DROPPED) {
		verdict(NFQNL_MSG_VERDICT, id, NF_DROP);
		st.bottleneck_drops++;
		st.bottleneck_bytes += len;
		return;
	}
	if (count == opt.maxlen) {          /* cannot happen: the kernel queue is no longer than ours */
		st.ring_full++;
		release_due(now_ns(), UINT64_MAX, 0);
	}
	ring[(head + count) % opt.maxlen] = (struct held){ id, len, due };
	count++;
	if (count > st.max_held)
		st.max_held = count;
}

/* A datagram may hold several netlink messages; the last one need not be 4-byte padded. */
static void on_datagram(const char *buf, int len, uint64_t arrived)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	while (mnl_nlmsg_ok(nlh, len)) {
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
			if (e->error)
				st.nl_errors++;
		} else if ((nlh->nlmsg_type & 0xff) == NFQNL_MSG_PACKET) {
			on_packet(nlh, arrived);
		}
		nlh = mnl_nlmsg_next(nlh, &len);
	}
}

/* Read everything queued on the socket (bounded).  Arrival stamps: `since` is the previous drain
 * (0: the socket was being polled, so what is there arrived just now).  Messages that waited since
 * then arrived somewhere in (since, now]: the i-th of n is stamped since + (i + 1/2)/n of the way,
 * which is unbiased for arrivals spread over the interval (error at most one coalescing period). */
static int drain(int fd, struct mmsghdr *msgs, uint64_t since)
{
	int got = 0;
	for (int round = 0; round < DRAIN_ROUNDS; round++) {
		int n = recvmmsg(fd, msgs, VLEN, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == ENOBUFS) {     /* kernel dropped packets it could not deliver */
				st.enobufs++;
				continue;
			}
			if (errno == EAGAIN || errno == EINTR)
				return got;
			die("recvmmsg");
		}
		uint64_t t = now_ns();
		struct timespec real;
		clock_gettime(CLOCK_REALTIME, &real);
		drained_at = now_ns();
		real_minus_mono_ns = (uint64_t)real.tv_sec * 1000000000ull + real.tv_nsec - drained_at;
		for (int i = 0; i < n; i++) {
			uint64_t at = (since && round == 0 && since < t)
				? since + (uint64_t)((t - since) * ((i + 0.5) / n)) : t;
			on_datagram(msgs[i].msg_hdr.msg_iov->iov_base, msgs[i].msg_len, at);
		}
		got += n;
		if (n < VLEN)
			return got;
	}
	return got;
}

/* The kernel's per-queue counters, visible in our network namespace. */
static void kernel_counters(uint64_t *total, uint64_t *dropped, uint64_t *user_dropped)
{
	FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
	unsigned q, pid, tot, mode, range, drop, udrop, seq;
	int one;
	*total = *dropped = *user_dropped = 0;
	if (!f)
		return;
	while (fscanf(f, "%u %u %u %u %u %u %u %u %d", &q, &pid, &tot, &mode, &range, &drop, &udrop,
		      &seq, &one) == 9) {
		if (q == opt.queue) {
			*total = tot; *dropped = drop; *user_dropped = udrop;
		}
	}
	fclose(f);
}

static void print_stats(const char *label)
{
	struct rusage ru;
	uint64_t qtotal, qdrop, qudrop, now = now_ns();
	getrusage(RUSAGE_SELF, &ru);
	kernel_counters(&qtotal, &qdrop, &qudrop);
	printf("%s {\"queue\": %u, \"delay_ns\": %" PRIu64 ", \"packets\": %" PRIu64
	       ", \"bytes\": %" PRIu64 ", \"released\": %" PRIu64 ", \"held\": %u, \"max_held\": %" PRIu64
	       ", \"kernel_queued\": %" PRIu64 ", \"queue_dropped\": %" PRIu64
	       ", \"user_dropped\": %" PRIu64 ", \"enobufs\": %" PRIu64 ", \"nl_errors\": %" PRIu64
	       ", \"ring_full\": %" PRIu64 ", \"late_sum_ns\": %" PRId64 ", \"late_max_ns\": %" PRId64
	       ", \"late_min_ns\": %" PRId64 ", \"period_late_max_ns\": %" PRId64
	       ", \"period_late_min_ns\": %" PRId64 ", \"wake_late_mean_ns\": %" PRId64
	       ", \"wakeups\": %" PRIu64 ", \"rate_bps\": %.0f, \"buffer_bytes\": %" PRIu64
	       ", \"bottleneck_drops\": %" PRIu64 ", \"bottleneck_drop_bytes\": %" PRIu64
	       ", \"bottleneck_overlimits\": %" PRIu64 ", \"kernel_stamped\": %" PRIu64
	       ", \"wire_bytes\": %" PRIu64 ", \"backlog_ns\": %" PRIu64
	       ", \"loss_on\": %d, \"loss_seed\": %" PRIu64 ", \"loss_seen\": %" PRIu64
	       ", \"loss_dropped\": %" PRIu64 ", \"stall_every_ns\": %" PRIu64 ", \"stall_hold_ns\": %" PRIu64
	       ", \"stall_holds\": %" PRIu64 ", \"late_episodes\": %" PRIu64 ", \"late_excess_ns\": %" PRIu64
	       ", \"late_uncovered_ns\": %" PRIu64 ", \"wire_shared\": %d, \"verdict_cpu\": %d"
	       ", \"verdict_batches\": %" PRIu64 ", \"verdict_lag_sum_ns\": %" PRIu64
	       ", \"verdict_lag_max_ns\": %" PRIu64 ", \"verdict_ring_full\": %" PRIu64
	       ", \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f, \"mono_ns\": %" PRIu64 ", \"period_late_hist\": [",
	       label, opt.queue, opt.delay_ns, st.packets, st.bytes, st.released, count, st.max_held, qtotal,
	       qdrop, qudrop, st.enobufs, st.nl_errors, st.ring_full, st.late_sum_ns,
	       st.released ? st.late_max_ns : 0, st.released ? st.late_min_ns : 0,
	       st.period_late_max_ns == INT64_MIN ? 0 : st.period_late_max_ns,
	       st.period_late_min_ns == INT64_MAX ? 0 : st.period_late_min_ns,
	       st.wake_late_ewma_ns, st.wakeups, opt.rate_bps, opt.buffer_bytes,
	       st.bottleneck_drops, st.bottleneck_bytes, st.overlimits, st.kernel_stamped, st.wire_bytes,
	       wire_free_ns > now ? wire_free_ns - now : 0, loss_on, loss_seed, st.loss_seen, st.loss_dropped,
	       opt.stall_every_ns, opt.stall_hold_ns, st.stall_holds, st.late_episodes, st.late_excess_ns,
	       st.late_uncovered_ns, opt.rate_bps > 0 || shared_wire_free ? 1 : 0, opt.verdict_cpu,
	       __atomic_load_n(&vst.batches, __ATOMIC_RELAXED), __atomic_load_n(&vst.lag_sum_ns, __ATOMIC_RELAXED),
	       __atomic_load_n(&vst.lag_max_ns, __ATOMIC_RELAXED), vr_full,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, now);
	for (int i = 0; i < LATE_BUCKETS; i++)
		printf(i ? ", %" PRIu64 : "%" PRIu64, st.period_late_hist[i]);
	printf("], \"verdict_lag_hist\": [");
	for (int i = 0; i < LATE_BUCKETS; i++)
		printf(i ? ", %" PRIu64 : "%" PRIu64, __atomic_load_n(&vst.hist[i], __ATOMIC_RELAXED));
	printf("], \"period_stalls\": %" PRIu64 ", \"period_stall_log\": [", st.stalls);
	uint64_t first = st.stalls > STALL_LOG ? st.stalls - STALL_LOG : 0;
	for (uint64_t i = first; i < st.stalls; i++) {
		struct stall *e = &stall_log[i % STALL_LOG];
		printf("%s[\"%c\", %" PRIu64 ", %" PRIu64 ", %u, %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
		       i > first ? ", " : "", e->kind, e->at_ns, e->dur_ns, e->held, e->nivcsw, e->nvcsw, e->cpu_us);
	}
	printf("]}\n");
	fflush(stdout);
}

/* stdin commands, one per line.  Returns 0 at end of input. */
static int on_command(void)
{
	static char line[256];
	static size_t used;
	ssize_t n = read(STDIN_FILENO, line + used, sizeof(line) - 1 - used);
	if (n <= 0)
		return n < 0 && errno == EINTR;
	used += n;
	line[used] = 0;
	char *nl_pos;
	while ((nl_pos = strchr(line, '\n'))) {
		*nl_pos = 0;
		unsigned long long v, w;
		if (sscanf(line, "delay %llu", &v) == 1) {
			opt.delay_ns = v;       /* applies to packets arriving from now on */
			printf("ok delay_ns=%llu\n", v);
			fflush(stdout);
		} else if (!strcmp(line, "stats")) {
			print_stats("stats");
		} else if (!strcmp(line, "period")) {
			print_stats("period");
			st.period_late_max_ns = INT64_MIN;
			st.period_late_min_ns = INT64_MAX;
			memset(st.period_late_hist, 0, sizeof(st.period_late_hist));
			st.stalls = 0;
		} else if (!strcmp(line, "loss on") || !strcmp(line, "loss off")) {
			loss_on = line[6] == 'n';
			printf("ok loss=%s\n", loss_on ? "on" : "off");
			fflush(stdout);
		} else if (sscanf(line, "seed %llu", &v) == 1) {
			rng_state = loss_seed = v;     /* the uniform stage's sequence starts again from v */
			printf("ok seed=%llu\n", v);
			fflush(stdout);
		} else if (sscanf(line, "stall %llu %llu", &v, &w) == 2) {
			if ((v || w) && !(w > 0 && w < v)) {       /* off (0 0), or a hold shorter than its period */
				printf("error stall needs 0 < hold < every, or 0 0 (off)\n");
			} else {
				opt.stall_every_ns = v;          /* from the next hold on */
				opt.stall_hold_ns = w;
				printf("ok stall every_ns=%llu hold_ns=%llu\n", v, w);
			}
			fflush(stdout);
		} else if (!strcmp(line, "quit")) {
			stop = 1;
		} else {
			printf("error unknown command\n");
			fflush(stdout);
		}
		used -= nl_pos + 1 - line;
		memmove(line, nl_pos + 1, used + 1);
	}
	if (used == sizeof(line) - 1)
		used = 0;                       /* overlong line: discard */
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: delayd --queue Q --delay-ns D [--rate-bps C --buffer-bytes B --mss M] "
			"[--granularity-ns G] [--loss-every N | --loss-rate P] [--maxlen M] [--copy-range B] [--rcvbuf BYTES] [--rt-priority P] [--turns] "
			"[--stall-every-ns P --stall-hold-ns D] [--control-stdin] [--wire-publish FD | --wire-cover FD] "
			"[--verdict-cpu CPU [--verdict-rt-priority P]]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "queue", required_argument, 0, 'q' }, { "delay-ns", required_argument, 0, 'd' },
		{ "maxlen", required_argument, 0, 'm' }, { "copy-range", required_argument, 0, 'c' },
		{ "rcvbuf", required_argument, 0, 'r' }, { "rt-priority", required_argument, 0, 'p' },
		{ "control-stdin", no_argument, 0, 'i' }, { "rate-bps", required_argument, 0, 'R' },
		{ "buffer-bytes", required_argument, 0, 'B' }, { "mss", required_argument, 0, 'M' },
		{ "granularity-ns", required_argument, 0, 'g' }, { "loss-every", required_argument, 0, 'L' },
		{ "loss-rate", required_argument, 0, 'P' }, { "turns", no_argument, 0, 't' },
		{ "stall-every-ns", required_argument, 0, 'E' }, { "stall-hold-ns", required_argument, 0, 'H' },
		{ "wire-publish", required_argument, 0, 'W' }, { "wire-cover", required_argument, 0, 'C' },
		{ "verdict-cpu", required_argument, 0, 'V' }, { "verdict-rt-priority", required_argument, 0, 'T' },
		{ 0 } };
	int c, have_queue = 0, have_delay = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'q': opt.queue = strtoul(optarg, NULL, 10); have_queue = 1; break;
		case 'd': opt.delay_ns = strtoull(optarg, NULL, 10); have_delay = 1; break;
		case 'm': opt.maxlen = strtoul(optarg, NULL, 10); break;
		case 'c': opt.copy_range = strtoul(optarg, NULL, 10); break;
		case 'r': opt.rcvbuf = (int)strtol(optarg, NULL, 10); break;
		case 'i': opt.control_stdin = 1; break;
		case 'p': opt.rt_priority = strtoul(optarg, NULL, 10); break;
		case 'R': opt.rate_bps = strtod(optarg, NULL); break;
		case 'B': opt.buffer_bytes = strtoull(optarg, NULL, 10); break;
		case 'M': opt.mss = strtoul(optarg, NULL, 10); break;
		case 'g': opt.granularity_ns = strtoull(optarg, NULL, 10); break;
		case 'L': opt.loss_every = strtoull(optarg, NULL, 10); break;
		case 'P': opt.loss_rate = strtod(optarg, NULL); break;
		case 't': opt.turns = 1; break;
		case 'E': opt.stall_every_ns = strtoull(optarg, NULL, 10); break;
		case 'H': opt.stall_hold_ns = strtoull(optarg, NULL, 10); break;
		case 'W': opt.wire_publish_fd = (int)strtol(optarg, NULL, 10); break;
		case 'C': opt.wire_cover_fd = (int)strtol(optarg, NULL, 10); break;
		case 'V': {
			char *end;
			long cpu = strtol(optarg, &end, 10);
			if (*end || end == optarg || cpu < 0 || cpu >= CPU_SETSIZE)
				usage();
			opt.verdict_cpu = (int)cpu;
			break;
		}
		case 'T': opt.verdict_rt_priority = strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (!have_queue || !have_delay || opt.queue > 65535 || !opt.maxlen || !opt.copy_range || !opt.mss
	    || opt.rate_bps < 0 || (opt.rate_bps > 0 && !opt.buffer_bytes)
	    || !(opt.loss_rate >= 0 && opt.loss_rate < 1) || (opt.loss_every && opt.loss_rate > 0)
	    || ((opt.stall_every_ns || opt.stall_hold_ns)
		&& !(opt.stall_hold_ns > 0 && opt.stall_hold_ns < opt.stall_every_ns))
	    || (opt.wire_publish_fd >= 0 && (opt.wire_cover_fd >= 0 || opt.rate_bps <= 0))
	    || (opt.wire_cover_fd >= 0 && opt.rate_bps > 0)
	    || (opt.verdict_rt_priority && (opt.verdict_cpu < 0 || opt.verdict_rt_priority > 99)))
		usage();
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	prctl(PR_SET_TIMERSLACK, 1UL);          /* default 50 us slack made every release late */
	if (opt.rt_priority) {                  /* the emulated wire should not wait for the CPU */
		struct sched_param sp = { .sched_priority = (int)opt.rt_priority };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			perror("warning: SCHED_FIFO not available, running with normal priority");
	}

	/* Our signals are blocked except while ppoll() sleeps (it then returns EINTR). */
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t ours, during_ppoll;
	sigemptyset(&ours);
	sigaddset(&ours, SIGTERM);
	sigaddset(&ours, SIGINT);
	sigaddset(&ours, SIGUSR1);
	sigprocmask(SIG_BLOCK, &ours, &during_ppoll);
	sigdelset(&during_ppoll, SIGTERM);
	sigdelset(&during_ppoll, SIGINT);
	sigdelset(&during_ppoll, SIGUSR1);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	int shared_fd = opt.wire_publish_fd >= 0 ? opt.wire_publish_fd : opt.wire_cover_fd;
	if (shared_fd >= 0) {                   /* "Uncovered excess": the forward wire's shared page */
		void *page = mmap(NULL, sizeof(uint64_t), PROT_READ | (opt.wire_publish_fd >= 0 ? PROT_WRITE : 0),
				  MAP_SHARED, shared_fd, 0);
		if (page == MAP_FAILED)
			die("mmap --wire-publish/--wire-cover");
		shared_wire_free = page;
		close(shared_fd);
	}
	ring = calloc(opt.maxlen, sizeof(*ring));
	if (!ring)
		die("calloc");
	nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!nl)
		die("netlink socket");
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		die("netlink bind");
	portid = mnl_socket_get_portid(nl);
	int fd = mnl_socket_get_fd(nl);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &opt.rcvbuf, sizeof(opt.rcvbuf)) < 0)
		die("SO_RCVBUFFORCE");
	bind_queue();
	if (opt.verdict_cpu >= 0)               /* after our signals were blocked: the thread inherits that */
		start_verdict_thread();
	/* Ask the kernel to timestamp received packets (a global switch, on while any socket asks):
	 * NFQUEUE then passes each packet's queueing time (NFQA_TIMESTAMP, 1 us resolution), so arrival
	 * times do not depend on when we wake up. */
	int stamp_fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	if (stamp_fd < 0 || setsockopt(stamp_fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		perror("warning: SO_TIMESTAMPNS (arrival times from wake-ups instead)");

	static char bufs[VLEN][MSGBUF];
	static struct iovec iov[VLEN];
	static struct mmsghdr msgs[VLEN];
	for (int i = 0; i < VLEN; i++) {
		iov[i] = (struct iovec){ bufs[i], MSGBUF };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}

	printf("ready queue=%u delay_ns=%" PRIu64 " maxlen=%u rate_bps=%.0f buffer_bytes=%" PRIu64
	       " stall_every_ns=%" PRIu64 " stall_hold_ns=%" PRIu64 " verdict_cpu=%d pid=%d\n", opt.queue, opt.delay_ns,
	       opt.maxlen, opt.rate_bps, opt.buffer_bytes, opt.stall_every_ns, opt.stall_hold_ns, opt.verdict_cpu, getpid());
	fflush(stdout);

	/* Wake-ups.  Quiet (the last wake-up found nothing new): sleep on the netlink socket and on the
	 * head's release time, so a lone packet is stamped when it arrives and released when due.
	 * Coalescing (the last wake-up drained packets): do not wake per arriving message (measured:
	 * one ppoll wake-up per packet, ~136k/s at 10 Gbit/s and MTU 9000, cost most of a core); wake
	 * one granularity G later instead, like a NIC's interrupt coalescing, drain what arrived meanwhile
	 * (stamped by interpolation, see drain()) and release everything due by now + G/2: releases then
	 * fall within +-G/2 of their due times, 0 on average.  Back to quiet when a wake-up finds nothing. */
	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 } };
	nfds_t nfds = opt.control_stdin ? 2 : 1;
	uint64_t last_wake = 0, g = opt.granularity_ns;
	int coalescing = 0;
	while (!stop) {
		struct timespec ts, *timeout = NULL;
		uint64_t target = wake_target(coalescing, last_wake, g);
		if (!coalescing)                       /* coalescing wake-ups go on draining through a hold */
			target = past_hold(target);
		int ahead = 0;                         /* the target was still ahead: a real sleep until it */
		pfd[0].fd = coalescing ? -1 : fd;      /* poll() ignores negative descriptors */
		if (target) {
			/* Aim early by the usual lateness of a wake-up, but while coalescing by at most G/2: the
			 * wake-up is then at least G/2 after the last one.  (Uncapped, a learnt lateness >= G
			 * put the target before the last wake-up: the engine never slept again while it had
			 * packets, and under SCHED_FIFO the other direction's engine on this CPU never ran.) */
			uint64_t early = (uint64_t)st.wake_late_ewma_ns;
			if (opt.turns && coalescing && early > g / 2)
				early = g / 2;
			if (!coalescing)
				early += handoff_ns();     /* the head's verdict is sent one hand-off after we wake */
			uint64_t aim = target > early ? target - early : 0, now = now_ns();
			uint64_t wait = aim > now ? aim - now : 0;
			ahead = target > now;
			if (opt.turns && !wait) /* no sleep: let the other direction's engine (same priority) go first */
				sched_yield();
			ts = (struct timespec){ wait / 1000000000ull, wait % 1000000000ull };
			timeout = &ts;
		}
		int r = ppoll(pfd, nfds, timeout, &during_ppoll);
		if (r < 0 && errno != EINTR)
			die("ppoll");
		uint64_t now = now_ns();
		st.wakeups++;
		/* A sleep that overran.  Not when the target had already passed (the previous iteration's
		 * work ran past it: that stall is logged once, as 'w'). */
		if (r == 0 && ahead && now > target + STALL_NS)
			log_stall('s', now, now - target);
		if (r == 0 && target && (ahead || !opt.turns)) {   /* a timer wake-up: learn how late it was */
			int64_t late = (int64_t)(now - target) + st.wake_late_ewma_ns;
			if (late > LATE_COMP_MAX_NS) late = LATE_COMP_MAX_NS;
			if (late < 0) late = 0;
			st.wake_late_ewma_ns += (late - st.wake_late_ewma_ns) >> LATE_EWMA_SHIFT;
		}
		/* What is due goes first: draining a backlog (up to DRAIN_ROUNDS x VLEN messages) after a
		 * late wake-up must not make it later still. */
		if (opt.turns)
			release_now(now, g);
		coalescing = drain(fd, msgs, coalescing ? last_wake : 0) > 0;
		last_wake = now;
		if (r > 0 && opt.control_stdin && (pfd[1].revents & (POLLIN | POLLHUP)))
			if (!on_command())
				stop = 1;      /* controller went away */
		uint64_t woke = now;
		now = now_ns();
		release_now(now, g);
		uint64_t done = now_ns();
		if (done > woke + STALL_NS)
			log_stall('w', done, done - woke);
		if (want_stats) {
			want_stats = 0;
			print_stats("stats");
		}
	}
	/* Let go of everything still held (and anything that arrived meanwhile), then unbind. */
	drain(fd, msgs, 0);
	release_due(0, 0, 1);
	stop_verdict_thread();                  /* every decided verdict is sent before the unbind */
	unbind_queue();
	print_stats("stats");
	mnl_socket_close(nl);
	return 0;
}
