// SPDX-License-Identifier: GPL-2.0-only
/* BIC-TCP (Xu, Harfoush, Rhee, INFOCOM 2004) as a BPF struct_ops congestion control,
 * registered as "tp_bic".
 *
 * Ported from Linux net/ipv4/tcp_bic.c as of v6.18 (loss_cwnd removed and undo_cwnd =
 * tcp_reno_undo_cwnd since 2017, pkts_acked(sk, const struct ack_sample *), last_max_cwnd == 0
 * as the "slow start / low utilisation" test, initial_ssthresh 0; the torvalds/linux blob
 * read for reference, commit 018da8f44c06, is the 2.6-era file with the same update rules).
 *
 * Differences from the C original (all of them):
 *  1. Module parameters (fast_convergence 1, max_increment 16, low_window 14, beta 819,
 *     initial_ssthresh 0, smooth_part 20) are compile-time constants.
 *  2. The private state struct is named tp_bictcp: vmlinux.h already defines struct bictcp
 *     (CUBIC's, built into this kernel).
 *  3. tcp_time_stamp / tcp_jiffies32 is bpf_jiffies64() truncated to 32 bits; HZ from
 *     CONFIG_HZ.
 *  4. tcp_snd_cwnd() is a plain read of tp->snd_cwnd; undo_cwnd is a BPF program calling the
 *     tcp_reno_undo_cwnd kfunc.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

#define BICTCP_BETA_SCALE 1024 /* Scale factor beta calculation: max_cwnd = snd_cwnd * beta */
#define BICTCP_B 4             /* In binary search, go to point (max+min)/N */
#define ACK_RATIO_SHIFT 4

static const int fast_convergence = 1;
static const __u32 max_increment = 16;
static const __u32 low_window = 14;
static const __u32 beta = 819; /* = 819/1024 (BICTCP_BETA_SCALE) */
static const __u32 initial_ssthresh;
static const __u32 smooth_part = 20;

struct tp_bictcp {
	__u32 cnt;           /* increase cwnd by 1 after ACKs */
	__u32 last_max_cwnd; /* last maximum snd_cwnd */
	__u32 last_cwnd;     /* the last snd_cwnd */
	__u32 last_time;     /* time when updated last_cwnd */
	__u32 epoch_start;   /* beginning of an epoch */
	__u32 delayed_ack;   /* estimate the ratio of Packets/ACKs << 4 */
};

static __always_inline void bictcp_reset(struct tp_bictcp *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << ACK_RATIO_SHIFT;
}

SEC("struct_ops")
void BPF_PROG(bictcp_init, struct sock *sk)
{
	bictcp_reset(inet_csk_ca(sk));
	if (initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

/* Compute congestion window to use. */
static __always_inline void bictcp_update(struct tp_bictcp *ca, __u32 cwnd)
{
	__u32 now = tp_jiffies32();

	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= HZ / 32)
		return;

	ca->last_cwnd = cwnd;
	ca->last_time = now;

	if (ca->epoch_start == 0) /* record the beginning of an epoch */
		ca->epoch_start = now;

	/* start off normal */
	if (cwnd <= low_window) {
		ca->cnt = cwnd;
		return;
	}

	/* binary increase */
	if (cwnd < ca->last_max_cwnd) {
		__u32 dist = (ca->last_max_cwnd - cwnd) / BICTCP_B;

		if (dist > max_increment)
			ca->cnt = cwnd / max_increment; /* linear increase */
		else if (dist <= 1U)
			ca->cnt = (cwnd * smooth_part) / BICTCP_B; /* binary search increase */
		else
			ca->cnt = cwnd / dist; /* binary search increase */
	} else {
		/* slow start AMD linear increase */
		if (cwnd < ca->last_max_cwnd + BICTCP_B)
			ca->cnt = (cwnd * smooth_part) / BICTCP_B; /* slow start */
		else if (cwnd < ca->last_max_cwnd + max_increment * (BICTCP_B - 1))
			ca->cnt = (cwnd * (BICTCP_B - 1)) / (cwnd - ca->last_max_cwnd); /* slow start */
		else
			ca->cnt = cwnd / max_increment; /* linear increase */
	}

	/* if in slow start or link utilization is very low */
	if (ca->last_max_cwnd == 0) {
		if (ca->cnt > 20) /* increase cwnd 5% per RTT */
			ca->cnt = 20;
	}

	ca->cnt = (ca->cnt << ACK_RATIO_SHIFT) / ca->delayed_ack;
	if (ca->cnt == 0) /* cannot be zero */
		ca->cnt = 1;
}

SEC("struct_ops")
void BPF_PROG(bictcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_bictcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(ca, tp->snd_cwnd);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

/* behave like Reno until low_window is reached, then increase congestion window slowly */
SEC("struct_ops")
__u32 BPF_PROG(bictcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tp_bictcp *ca = inet_csk_ca(sk);

	ca->epoch_start = 0; /* end of epoch */

	/* Wmax and fast convergence */
	if (tp->snd_cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (tp->snd_cwnd * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = tp->snd_cwnd;

	if (tp->snd_cwnd <= low_window)
		return max(tp->snd_cwnd >> 1U, 2U);
	/* cwnd × 819/1024 ≈ 0.8 × cwnd */
	return max((tp->snd_cwnd * beta) / BICTCP_BETA_SCALE, 2U);
}

SEC("struct_ops")
void BPF_PROG(bictcp_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		bictcp_reset(inet_csk_ca(sk));
}

/* Track delayed acknowledgement ratio using sliding window: ratio = (15*ratio + sample) / 16 */
SEC("struct_ops")
void BPF_PROG(bictcp_acked, struct sock *sk, const struct ack_sample *sample)
{
	if (tp_ca_state(sk) == TCP_CA_Open) {
		struct tp_bictcp *ca = inet_csk_ca(sk);

		ca->delayed_ack += sample->pkts_acked - (ca->delayed_ack >> ACK_RATIO_SHIFT);
	}
}

TP_RENO_UNDO(bictcp)

SEC(".struct_ops")
struct tcp_congestion_ops tp_bic = {
	.init = (void *)bictcp_init,
	.ssthresh = (void *)bictcp_recalc_ssthresh,
	.cong_avoid = (void *)bictcp_cong_avoid,
	.set_state = (void *)bictcp_state,
	.undo_cwnd = (void *)bictcp_undo_cwnd,
	.pkts_acked = (void *)bictcp_acked,
	.name = "tp_bic",
};
