// SPDX-License-Identifier: GPL-2.0-only
/* TCP Vegas (Brakmo & Peterson, JSAC 1995) as a BPF struct_ops congestion control,
 * registered as "tp_vegas".
 *
 * Ported from Linux net/ipv4/tcp_vegas.c as of v6.18 (the torvalds/linux blob read for
 * reference is commit 09c434b8a004, SPDX-era; later changes are only the tcp_snd_cwnd()
 * accessors).
 *
 * Differences from the C original (all of them):
 *  1. The exported helpers tcp_vegas_init/pkts_acked/state/cwnd_event are compiled into this
 *     object (bpf/tp_vegas.h): this kernel has no Vegas and no tcp_vegas_* kfuncs.
 *  2. Module parameters alpha 2, beta 4, gamma 1 are compile-time constants.
 *  3. get_info is omitted (struct_ops rejects it on this kernel): `ss -i` shows no vegas info.
 *  4. tcp_current_ssthresh() and tcp_in_cwnd_reduction() are reimplemented (tp_common.h);
 *     tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes of tp->snd_cwnd.
 *  5. ssthresh/undo_cwnd are BPF programs calling the tcp_reno_ssthresh/tcp_reno_undo_cwnd
 *     kfuncs; the Reno fallback calls the tcp_reno_cong_avoid kfunc.
 */
#include "tp_vegas.h"

char _license[] SEC("license") = "GPL";

static const __u32 alpha = 2; /* lower bound of packets in network */
static const __u32 beta = 4;  /* upper bound of packets in network */
static const __u32 gamma = 1; /* limit on increase (scale by 2) */

SEC("struct_ops")
void BPF_PROG(vegas_init_op, struct sock *sk)
{
	vegas_init(sk, inet_csk_ca(sk));
}

SEC("struct_ops")
void BPF_PROG(vegas_pkts_acked_op, struct sock *sk, const struct ack_sample *sample)
{
	vegas_pkts_acked(inet_csk_ca(sk), sample);
}

SEC("struct_ops")
void BPF_PROG(vegas_state_op, struct sock *sk, __u8 ca_state)
{
	vegas_state(sk, inet_csk_ca(sk), ca_state);
}

SEC("struct_ops")
void BPF_PROG(vegas_cwnd_event_op, struct sock *sk, enum tcp_ca_event event)
{
	vegas_cwnd_event(sk, inet_csk_ca(sk), event);
}

static __always_inline __u32 tcp_vegas_ssthresh(struct tcp_sock *tp)
{
	return min(tp->snd_ssthresh, tp->snd_cwnd);
}

SEC("struct_ops")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_vegas *vegas = inet_csk_ca(sk);

	if (!vegas->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}

	if (after(ack, vegas->beg_snd_nxt)) {
		/* Do the Vegas once-per-RTT cwnd adjustment. */
		vegas->beg_snd_nxt = tp->snd_nxt;

		/* Need >= 3 RTT samples so that one is not from a delayed ACK. */
		if (vegas->cntRTT <= 2) {
			tcp_reno_cong_avoid(sk, ack, acked);
		} else {
			__u32 rtt, diff;
			__u64 target_cwnd;

			rtt = vegas->minRTT; /* min RTT of the last RTT [µs] */

			/* expected cwnd = (actual rate in segments) × baseRTT */
			target_cwnd = (__u64)tp->snd_cwnd * vegas->baseRTT;
			target_cwnd /= rtt;

			/* Diff = cwnd·(RTT − baseRTT)/baseRTT: packets queued in the network */
			diff = tp->snd_cwnd * (rtt - vegas->baseRTT) / vegas->baseRTT;

			if (diff > gamma && tcp_in_slow_start(tp)) {
				/* Going too fast: set cwnd to the actual rate, leave slow start. */
				tp->snd_cwnd = min(tp->snd_cwnd, (__u32)target_cwnd + 1);
				tp->snd_ssthresh = tcp_vegas_ssthresh(tp);
			} else if (tcp_in_slow_start(tp)) {
				tcp_slow_start(tp, acked);
			} else {
				/* Congestion avoidance: keep alpha <= Diff <= beta packets queued. */
				if (diff > beta) {
					tp->snd_cwnd--;
					tp->snd_ssthresh = tcp_vegas_ssthresh(tp);
				} else if (diff < alpha) {
					tp->snd_cwnd++;
				}
			}

			if (tp->snd_cwnd < 2)
				tp->snd_cwnd = 2;
			else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
				tp->snd_cwnd = tp->snd_cwnd_clamp;

			tp->snd_ssthresh = tcp_current_ssthresh(sk);
		}

		/* Wipe the slate clean for the next RTT. */
		vegas->cntRTT = 0;
		vegas->minRTT = 0x7fffffff;
	} else if (tcp_in_slow_start(tp)) {
		/* Use normal slow start */
		tcp_slow_start(tp, acked);
	}
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_ssthresh_op, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

TP_RENO_UNDO(vegas)

SEC(".struct_ops")
struct tcp_congestion_ops tp_vegas = {
	.init = (void *)vegas_init_op,
	.ssthresh = (void *)vegas_ssthresh_op,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.cong_avoid = (void *)vegas_cong_avoid,
	.pkts_acked = (void *)vegas_pkts_acked_op,
	.set_state = (void *)vegas_state_op,
	.cwnd_event = (void *)vegas_cwnd_event_op,
	.name = "tp_vegas",
};
