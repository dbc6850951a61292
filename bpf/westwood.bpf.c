// SPDX-License-Identifier: GPL-2.0-only
/* TCP Westwood+ (Mascolo, Casetti, Gerla, Grieco) as a BPF struct_ops congestion control,
 * registered as "tp_westwood".
 *
 * Ported from Linux net/ipv4/tcp_westwood.c as of v6.18 (in_ack_event with CA_ACK_SLOWPATH,
 * CA_EVENT_COMPLETE_CWR / CA_EVENT_LOSS, first_ack and reset_rtt_min, pkts_acked with
 * usecs_to_jiffies(rtt_us), undo_cwnd = tcp_reno_undo_cwnd).  The torvalds/linux blob
 * returned by read_file is the 2.6.13 file (commit 129521dcc94f); the v4+ structure was read
 * from the code corpus (tcp_westwood_ack/tcp_westwood_event of the current file).
 *
 * Differences from the C original (all of them):
 *  1. tcp_jiffies32 is bpf_jiffies64() truncated to 32 bits; HZ from CONFIG_HZ (250 here),
 *     so RTT and RTTmin are in jiffies with a resolution of 4 ms (the original has the same
 *     resolution at HZ=250).  Bandwidth is in bytes per jiffy; the cwnd it restores after a
 *     loss is bw_est × RTTmin / mss, in packets.
 *  2. usecs_to_jiffies() is reimplemented (rounds up).
 *  3. get_info is omitted: struct_ops rejects it on this kernel.
 *  4. tcp_snd_cwnd_set() is a plain write; ssthresh/cong_avoid/undo_cwnd are BPF programs
 *     calling the tcp_reno_ssthresh/tcp_reno_cong_avoid/tcp_reno_undo_cwnd kfuncs (the
 *     original points the ops at those functions).
 *  5. Private state struct named tp_westwood.
 * Not differences: the u32 arithmetic (bk / delta, the s32 delta compared unsigned with
 * max(rtt, HZ/20), bw_est × rtt_min wrapping above 2^32: 10 Gbit/s is 5e6 bytes/jiffy, so only an
 * rtt_min above 858 jiffies = 3.4 s could wrap), the `accounted` bookkeeping, and the hooks: the
 * kernel calls a struct_ops algorithm's pkts_acked, in_ack_event (after tcp_clean_rtx_queue in 6.18)
 * and cwnd_event (CA_EVENT_COMPLETE_CWR, CA_EVENT_LOSS) from the same sites as a built-in one.
 *
 * Checked against the kernel file's arithmetic replayed over this port's own ACKs
 * (src/tcpprofile/cc/westwood_check.py, benchmarks/westwood_trace.py, tests/test_westwood_*.py):
 * it sets what tcp_westwood.c computes.  Its low cwnd after slow start at 10 Gbit/s is Westwood+'s
 * filter lagging slow start, not the port: docs/cc.md.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

struct tp_westwood {
	__u32 bw_ns_est;  /* first bandwidth estimation..not too smoothed 8) */
	__u32 bw_est;     /* bandwidth estimate [bytes/jiffy] */
	__u32 rtt_win_sx; /* here starts a new evaluation... */
	__u32 bk;
	__u32 snd_una;    /* used for evaluating the number of acked bytes */
	__u32 cumul_ack;
	__u32 accounted;
	__u32 rtt;        /* [jiffies] */
	__u32 rtt_min;    /* minimum observed RTT [jiffies] */
	__u8 first_ack;   /* flag which infers that this is the first ack */
	__u8 reset_rtt_min; /* Reset RTT min to next RTT sample*/
};

#define TCP_WESTWOOD_RTT_MIN (HZ / 20) /* 50ms */
#define TCP_WESTWOOD_INIT_RTT (20 * HZ) /* maybe too conservative?! */

SEC("struct_ops")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct tp_westwood *w = inet_csk_ca(sk);

	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = TCP_WESTWOOD_INIT_RTT;
	w->rtt_win_sx = tp_jiffies32();
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/* Low-pass filter with constant coefficients: (7a + b)/8 */
static __always_inline __u32 westwood_do_filter(__u32 a, __u32 b)
{
	return ((7 * a) + b) >> 3;
}

static __always_inline void westwood_filter(struct tp_westwood *w, __u32 delta)
{
	/* If the filter is empty fill it with the first sample of bandwidth  */
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = w->bk / delta;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = westwood_do_filter(w->bw_ns_est, w->bk / delta);
		w->bw_est = westwood_do_filter(w->bw_est, w->bw_ns_est);
	}
}

/* All westwood needs is the last RTT sample. */
SEC("struct_ops")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tp_westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = tp_usecs_to_jiffies(sample->rtt_us);
}

/* Update the RTT evaluation window (at least 50 ms) and filter the bandwidth sample. */
static __always_inline void westwood_update_window(struct sock *sk)
{
	struct tp_westwood *w = inet_csk_ca(sk);
	__s32 delta = tp_jiffies32() - w->rtt_win_sx;

	/* Initialize w->snd_una with the first acked sequence number */
	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}

	if (w->rtt && delta > max(w->rtt, TCP_WESTWOOD_RTT_MIN)) {
		westwood_filter(w, delta);
		w->bk = 0;
		w->rtt_win_sx = tp_jiffies32();
	}
}

static __always_inline void update_rtt_min(struct tp_westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else {
		w->rtt_min = min(w->rtt, w->rtt_min);
	}
}

/* Fast path: snd_una advanced in order. */
static __always_inline void westwood_fast_bw(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tp_westwood *w = inet_csk_ca(sk);

	westwood_update_window(sk);

	w->bk += tp->snd_una - w->snd_una;
	w->snd_una = tp->snd_una;
	update_rtt_min(w);
}

/* Bytes acked by this ACK, with the delayed/partial/duplicate ACK accounting. */
static __always_inline __u32 westwood_acked_count(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tp_westwood *w = inet_csk_ca(sk);

	w->cumul_ack = tp->snd_una - w->snd_una;

	/* If cumul_ack is 0 this is a dupack since it's not moving tp->snd_una. */
	if (!w->cumul_ack) {
		w->accounted += tp->mss_cache;
		w->cumul_ack = tp->mss_cache;
	}

	if (w->cumul_ack > tp->mss_cache) {
		/* Partial or delayed ack */
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = tp->mss_cache;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}

	w->snd_una = tp->snd_una;
	return w->cumul_ack;
}

/* cwnd after loss = BWE × RTTmin / mss [packets], at least 2 */
static __always_inline __u32 westwood_bw_rttmin(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct tp_westwood *w = inet_csk_ca(sk);

	return max((w->bw_est * w->rtt_min) / tp->mss_cache, 2U);
}

SEC("struct_ops")
void BPF_PROG(westwood_ack, struct sock *sk, __u32 ack_flags)
{
	if (ack_flags & CA_ACK_SLOWPATH) {
		struct tp_westwood *w = inet_csk_ca(sk);

		westwood_update_window(sk);
		w->bk += westwood_acked_count(sk);
		update_rtt_min(w);
		return;
	}
	westwood_fast_bw(sk);
}

SEC("struct_ops")
void BPF_PROG(westwood_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_westwood *w = inet_csk_ca(sk);

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		tp->snd_ssthresh = westwood_bw_rttmin(sk);
		tp->snd_cwnd = tp->snd_ssthresh;
		break;
	case CA_EVENT_LOSS:
		tp->snd_ssthresh = westwood_bw_rttmin(sk);
		/* Update RTT_min when next ack arrives */
		w->reset_rtt_min = 1;
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

TP_RENO_UNDO(westwood)

SEC(".struct_ops")
struct tcp_congestion_ops tp_westwood = {
	.init = (void *)westwood_init,
	.ssthresh = (void *)westwood_ssthresh,
	.cong_avoid = (void *)westwood_cong_avoid,
	.undo_cwnd = (void *)westwood_undo_cwnd,
	.cwnd_event = (void *)westwood_event,
	.in_ack_event = (void *)westwood_ack,
	.pkts_acked = (void *)westwood_pkts_acked,
	.name = "tp_westwood",
};
