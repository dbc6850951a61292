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
 *  - Timer wake-ups were measured ~50 us late per direction; part of that is the default 50 us timer
 *    slack, which we set to 1 ns (PR_SET_TIMERSLACK).  Busy-polling the last 100 us was measured to
 *    gain little for up to a core of CPU, and at SCHED_FIFO would starve the machine: not done.
 *    The remaining, roughly constant lateness (~0.12-0.23 ms per direction here, netlink round
 *    trips included) is compensated by the caller: it measures the idle RTT through the link and
 *    lowers the per-direction delay (testbed/calibrate.py).
 *  - With other processes competing for the 2 cores, wake-ups were late by 0.7-1.9 ms on average
 *    (load 4-7); --rt-priority runs the engine SCHED_FIFO so that the emulated wire does not wait for
 *    the CPU (the kernel's RT throttling still leaves 5 % to everything else).
 *  - The caller raises the IPv4 GSO size of the link's devices (BIG TCP, up to 400 kB) when
 *    offloads are on: 2-4x fewer packets through this program and the stacks (measured: engine CPU
 *    halved, 10 Gbit/s at 45.6 ms reached under load where 64 KiB GSO did not).
 *  - Signals are blocked except inside ppoll(), so a SIGTERM can never be missed between the loop
 *    test and the sleep.
 *  - Released packets continue through the receiver's stack inside our verdict call, so our CPU time
 *    includes part of the receiver's TCP processing.
 *
 * Interface:
 *   delayd --queue Q --delay-ns D [--maxlen M] [--copy-range B] [--rcvbuf BYTES] [--rt-priority P]
 *          [--control-stdin]
 *   stdout: "ready queue=Q ..." once bound; "stats {json}" on exit, on SIGUSR1 and on the stdin
 *   command "stats".  stdin commands (with --control-stdin): "delay NS", "stats", "quit"; end of
 *   stdin (the controlling process died) also ends the program.
 *   SIGTERM/SIGINT: accept everything still held, unbind the queue, print stats, exit 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define VLEN 256           /* datagrams per recvmmsg() */
#define MSGBUF 512         /* one queued-packet message with a 64-byte copy is ~150 bytes */
#define DRAIN_ROUNDS 16    /* recvmmsg() calls per wake-up before looking at the clock again */

struct held { uint32_t id; uint32_t len; uint64_t due; };

static struct {
	unsigned queue, copy_range, rt_priority;
	uint32_t maxlen;
	uint64_t delay_ns;
	int rcvbuf, control_stdin;
} opt = { .copy_range = 64, .maxlen = 1u << 16, .rcvbuf = 256 << 20 };

static struct {
	uint64_t packets, bytes, released, max_held, enobufs, nl_errors, ring_full;
	uint64_t late_sum_ns, late_max_ns, wakeups;
} st;

static struct held *ring;            /* FIFO of held packets, capacity opt.maxlen */
static uint32_t head, count;
static struct mnl_socket *nl;
static unsigned portid;
static volatile sig_atomic_t stop, want_stats;

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

/* NFQNL_MSG_VERDICT_BATCH: the kernel applies the verdict to every queued id <= the given id. */
static void verdict_upto(uint32_t id)
{
	char buf[128];
	struct nlmsghdr *nlh = put_header(buf, NFQNL_MSG_VERDICT_BATCH, 0);
	struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(NF_ACCEPT), .id = htonl(id) };
	mnl_attr_put(nlh, NFQA_VERDICT_HDR, sizeof(vh), &vh);
	while (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
			die("send verdict");
	}
}

/* Release, in one batch verdict, every held packet whose due time has passed. */
static void release_due(uint64_t now, int all)
{
	uint32_t n = 0, last = 0;
	while (n < count) {
		struct held *h = &ring[(head + n) % opt.maxlen];
		if (!all && h->due > now)
			break;
		if (now > h->due) {
			uint64_t late = now - h->due;
			st.late_sum_ns += late;
			if (late > st.late_max_ns)
				st.late_max_ns = late;
		}
		last = h->id;
		n++;
	}
	if (!n)
		return;
	verdict_upto(last);
	head = (head + n) % opt.maxlen;
	count -= n;
	st.released += n;
}

/* One queued packet: NFQA_PACKET_HDR carries the id; NFQA_CAP_LEN the full length when the copy
 * was truncated (else the payload length is the packet length). */
static void on_packet(const struct nlmsghdr *nlh, uint64_t arrived)
{
	struct nlattr *a;
	uint32_t id = 0, len = 0, caplen = 0;
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
		}
	}
	if (!have_id)
		return;
	if (count == opt.maxlen) {          /* cannot happen: the kernel queue is no longer than ours */
		st.ring_full++;
		release_due(UINT64_MAX, 0);
	}
	ring[(head + count) % opt.maxlen] = (struct held){ id, caplen ? caplen : len,
							   arrived + opt.delay_ns };
	count++;
	st.packets++;
	st.bytes += caplen ? caplen : len;
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

/* Read everything queued on the socket (bounded), stamping each batch with its arrival time. */
static void drain(int fd, struct mmsghdr *msgs)
{
	for (int round = 0; round < DRAIN_ROUNDS; round++) {
		int n = recvmmsg(fd, msgs, VLEN, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == ENOBUFS) {     /* kernel dropped packets it could not deliver */
				st.enobufs++;
				continue;
			}
			if (errno == EAGAIN || errno == EINTR)
				return;
			die("recvmmsg");
		}
		uint64_t t = now_ns();
		for (int i = 0; i < n; i++)
			on_datagram(msgs[i].msg_hdr.msg_iov->iov_base, msgs[i].msg_len, t);
		if (n < VLEN)
			return;
	}
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

static void print_stats(void)
{
	struct rusage ru;
	uint64_t qtotal, qdrop, qudrop;
	getrusage(RUSAGE_SELF, &ru);
	kernel_counters(&qtotal, &qdrop, &qudrop);
	printf("stats {\"queue\": %u, \"delay_ns\": %" PRIu64 ", \"packets\": %" PRIu64
	       ", \"bytes\": %" PRIu64 ", \"released\": %" PRIu64 ", \"held\": %u, \"max_held\": %" PRIu64
	       ", \"kernel_queued\": %" PRIu64 ", \"queue_dropped\": %" PRIu64
	       ", \"user_dropped\": %" PRIu64 ", \"enobufs\": %" PRIu64 ", \"nl_errors\": %" PRIu64
	       ", \"ring_full\": %" PRIu64 ", \"late_mean_ns\": %" PRIu64 ", \"late_max_ns\": %" PRIu64
	       ", \"wakeups\": %" PRIu64 ", \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f}\n",
	       opt.queue, opt.delay_ns, st.packets, st.bytes, st.released, count, st.max_held, qtotal,
	       qdrop, qudrop, st.enobufs, st.nl_errors, st.ring_full,
	       st.released ? st.late_sum_ns / st.released : 0, st.late_max_ns, st.wakeups,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
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
		unsigned long long v;
		if (sscanf(line, "delay %llu", &v) == 1) {
			opt.delay_ns = v;       /* applies to packets arriving from now on */
			printf("ok delay_ns=%llu\n", v);
			fflush(stdout);
		} else if (!strcmp(line, "stats")) {
			print_stats();
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
	fprintf(stderr, "usage: delayd --queue Q --delay-ns D [--maxlen M] [--copy-range B] "
			"[--rcvbuf BYTES] [--rt-priority P] [--control-stdin]\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "queue", required_argument, 0, 'q' }, { "delay-ns", required_argument, 0, 'd' },
		{ "maxlen", required_argument, 0, 'm' }, { "copy-range", required_argument, 0, 'c' },
		{ "rcvbuf", required_argument, 0, 'r' }, { "rt-priority", required_argument, 0, 'p' },
		{ "control-stdin", no_argument, 0, 'i' }, { 0 } };
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
		default: usage();
		}
	}
	if (!have_queue || !have_delay || opt.queue > 65535 || !opt.maxlen || !opt.copy_range)
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

	static char bufs[VLEN][MSGBUF];
	static struct iovec iov[VLEN];
	static struct mmsghdr msgs[VLEN];
	for (int i = 0; i < VLEN; i++) {
		iov[i] = (struct iovec){ bufs[i], MSGBUF };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}

	printf("ready queue=%u delay_ns=%" PRIu64 " maxlen=%u pid=%d\n", opt.queue, opt.delay_ns,
	       opt.maxlen, getpid());
	fflush(stdout);

	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 } };
	nfds_t nfds = opt.control_stdin ? 2 : 1;
	while (!stop) {
		/* Sleep until the head of the FIFO is due or a message arrives.  ppoll's timeout is an
		 * hrtimer with our 1 ns slack: one syscall per wake-up, no timerfd to re-arm and read. */
		struct timespec ts, *timeout = NULL;
		if (count) {
			uint64_t due = ring[head].due, now = now_ns();
			uint64_t wait = due > now ? due - now : 0;
			ts = (struct timespec){ wait / 1000000000ull, wait % 1000000000ull };
			timeout = &ts;
		}
		int r = ppoll(pfd, nfds, timeout, &during_ppoll);
		if (r < 0 && errno != EINTR)
			die("ppoll");
		st.wakeups++;
		if (r > 0 && (pfd[0].revents & POLLIN))
			drain(fd, msgs);
		if (r > 0 && opt.control_stdin && (pfd[1].revents & (POLLIN | POLLHUP)))
			if (!on_command())
				stop = 1;      /* controller went away */
		release_due(now_ns(), 0);
		if (want_stats) {
			want_stats = 0;
			print_stats();
		}
	}
	/* Let go of everything still held (and anything that arrived meanwhile), then unbind. */
	drain(fd, msgs);
	release_due(0, 1);
	unbind_queue();
	print_stats();
	mnl_socket_close(nl);
	return 0;
}
