// SPDX-License-Identifier: GPL-2.0-only
/* Scalable TCP (Tom Kelly) as a BPF struct_ops congestion control, registered as "tp_scalable".
 *
 * Ported from Linux net/ipv4/tcp_scalable.c as of v6.18 (logic unchanged since the 2017
 * change to tcp_cong_avoid_ai(tp, w, acked) with TCP_SCALABLE_AI_CNT = 100; the torvalds/linux
 * blob read for reference, commit 02b5a6031ba7, is the older 50-count version).
 *
 * Differences from the C original (all of them):
 *  1. tcp_snd_cwnd() is a plain read of tp->snd_cwnd.
 *  2. undo_cwnd is a BPF program calling the tcp_reno_undo_cwnd kfunc (the original points
 *     the op at the function directly).
 *  3. No other change: a = 1/100 per ACKed packet above cwnd 100 (≈ +1 % per RTT),
 *     b = 1/8 on loss (cwnd × 0.875).
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

/* These factors derived from the recommended values in the paper: .01 and 7/8. */
#define TCP_SCALABLE_AI_CNT 100U
#define TCP_SCALABLE_MD_SCALE 3

SEC("struct_ops")
void BPF_PROG(scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	/* +1 packet per min(cwnd, 100) ACKed packets: +1 % of cwnd per RTT when cwnd >= 100 */
	tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, TCP_SCALABLE_AI_CNT), acked);
}

SEC("struct_ops")
__u32 BPF_PROG(scalable_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* cwnd − cwnd/8 = 0.875 × cwnd */
	return max(tp->snd_cwnd - (tp->snd_cwnd >> TCP_SCALABLE_MD_SCALE), 2U);
}

TP_RENO_UNDO(scalable)

SEC(".struct_ops")
struct tcp_congestion_ops tp_scalable = {
	.ssthresh = (void *)scalable_ssthresh,
	.cong_avoid = (void *)scalable_cong_avoid,
	.undo_cwnd = (void *)scalable_undo_cwnd,
	.name = "tp_scalable",
};
