// SPDX-License-Identifier: GPL-2.0-only
/* H-TCP as a BPF struct_ops congestion control, registered as "tp_htcp".
 *
 * Ported from Linux net/ipv4/tcp_htcp.c (torvalds/linux blob at commit 05909cd9a0c8, the
 * SPDX-era file that is unchanged in logic up to v6.18 apart from the tcp_snd_cwnd()
 * accessors of v5.19).  Algorithm: R.N. Shorten, D.J. Leith, "H-TCP: TCP for high-speed and
 * long-distance networks", PFLDnet 2004.
 *
 * Differences from the C original (all of them):
 *  1. Module parameters use_rtt_scaling and use_bandwidth_switch are compile-time constants
 *     (both 1, the kernel defaults).
 *  2. tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes of tp->snd_cwnd (the kernel
 *     helper only adds a WARN_ON for values <= 0, which this code never writes).
 *  3. `jiffies` is bpf_jiffies64() truncated to 32 bits; HZ comes from CONFIG_HZ (250 here).
 *     RTTs are kept in jiffies exactly as in the original, so minRTT/maxRTT have a resolution
 *     of 4 ms at HZ=250 (the original has the same resolution on a HZ=250 kernel).  With a
 *     sub-4-ms path, minRTT is one jiffy and β stays at 0.5 (minRTT <= 10 ms disables the
 *     adaptive β, in the original too).
 *  4. usecs_to_jiffies()/msecs_to_jiffies() are reimplemented (round up, as the kernel does
 *     when HZ divides 10^6).
 *  5. The private state struct is named tp_htcp (vmlinux.h may carry kernel names).
 *  6. No other change: same hooks (init, ssthresh, cong_avoid, set_state, undo_cwnd,
 *     pkts_acked); undo_cwnd calls the tcp_reno_undo_cwnd kfunc as the original does.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

#define ALPHA_BASE (1 << 7) /* 1.0 with shift << 7 */
#define BETA_MIN (1 << 6)   /* 0.5 with shift << 7 */
#define BETA_MAX 102        /* 0.8 with shift << 7 */

static const int use_rtt_scaling = 1;
static const int use_bandwidth_switch = 1;

struct tp_htcp {
	__u32 alpha;      /* Fixed point arith, << 7 */
	__u8 beta;        /* Fixed point arith, << 7 */
	__u8 modeswitch;  /* Delay modeswitch until we had at least one congestion event */
	__u16 pkts_acked;
	__u32 packetcount;
	__u32 minRTT;     /* jiffies */
	__u32 maxRTT;     /* jiffies */
	__u32 last_cong;  /* Time since last congestion event end */
	__u32 undo_last_cong;
	__u32 undo_maxRTT;
	__u32 undo_old_maxB;
	/* Bandwidth estimation */
	__u32 minB;
	__u32 maxB;
	__u32 old_maxB;
	__u32 Bi;
	__u32 lasttime;
};

static __always_inline int between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

static __always_inline __u32 htcp_cong_time(const struct tp_htcp *ca)
{
	return tp_jiffies32() - ca->last_cong;
}

static __always_inline __u32 htcp_ccount(const struct tp_htcp *ca)
{
	return htcp_cong_time(ca) / ca->minRTT;
}

static __always_inline void htcp_reset(struct tp_htcp *ca)
{
	ca->undo_last_cong = ca->last_cong;
	ca->undo_maxRTT = ca->maxRTT;
	ca->undo_old_maxB = ca->old_maxB;
	ca->last_cong = tp_jiffies32();
}

SEC("struct_ops")
__u32 BPF_PROG(htcp_cwnd_undo, struct sock *sk)
{
	struct tp_htcp *ca = inet_csk_ca(sk);

	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->maxRTT = ca->undo_maxRTT;
		ca->old_maxB = ca->undo_old_maxB;
		ca->undo_last_cong = 0;
	}
	return tcp_reno_undo_cwnd(sk);
}

static __always_inline void measure_rtt(struct sock *sk, __u32 srtt)
{
	struct tp_htcp *ca = inet_csk_ca(sk);

	/* keep track of minimum RTT seen so far, minRTT is zero at first */
	if (ca->minRTT > srtt || !ca->minRTT)
		ca->minRTT = srtt;

	/* max RTT */
	if (tp_ca_state(sk) == TCP_CA_Open) {
		if (ca->maxRTT < ca->minRTT)
			ca->maxRTT = ca->minRTT;
		if (ca->maxRTT < srtt && srtt <= ca->maxRTT + tp_msecs_to_jiffies(20))
			ca->maxRTT = srtt;
	}
}

SEC("struct_ops")
void BPF_PROG(htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tp_htcp *ca = inet_csk_ca(sk);
	__u32 now = tp_jiffies32();
	__u8 state = tp_ca_state(sk);

	if (state == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;

	if (sample->rtt_us > 0)
		measure_rtt(sk, tp_usecs_to_jiffies(sample->rtt_us));

	if (!use_bandwidth_switch)
		return;

	/* achieved throughput calculations */
	if (!(TP_CAF(state) & (TP_CAF(TCP_CA_Open) | TP_CAF(TCP_CA_Disorder)))) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}

	ca->packetcount += sample->pkts_acked;

	if (ca->packetcount >= tp->snd_cwnd - ((ca->alpha >> 7) ?: 1) &&
	    now - ca->lasttime >= ca->minRTT && ca->minRTT > 0) {
		__u32 cur_Bi = ca->packetcount * HZ / (now - ca->lasttime);

		if (htcp_ccount(ca) <= 3) {
			/* just after backoff */
			ca->minB = ca->maxB = ca->Bi = cur_Bi;
		} else {
			ca->Bi = (3 * ca->Bi + cur_Bi) / 4;
			if (ca->Bi > ca->maxB)
				ca->maxB = ca->Bi;
			if (ca->minB > ca->maxB)
				ca->minB = ca->maxB;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

static __always_inline void htcp_beta_update(struct tp_htcp *ca, __u32 minRTT, __u32 maxRTT)
{
	if (use_bandwidth_switch) {
		__u32 maxB = ca->maxB;
		__u32 old_maxB = ca->old_maxB;

		ca->old_maxB = ca->maxB;
		if (!between(5 * maxB, 4 * old_maxB, 6 * old_maxB)) {
			ca->beta = BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}

	if (ca->modeswitch && minRTT > tp_msecs_to_jiffies(10) && maxRTT) {
		__u32 beta = (minRTT << 7) / maxRTT; /* β = RTTmin/RTTmax, clamped to [0.5, 0.8] */

		if (beta < BETA_MIN)
			beta = BETA_MIN;
		else if (beta > BETA_MAX)
			beta = BETA_MAX;
		ca->beta = beta;
	} else {
		ca->beta = BETA_MIN;
		ca->modeswitch = 1;
	}
}

static __always_inline void htcp_alpha_update(struct tp_htcp *ca)
{
	__u32 minRTT = ca->minRTT;
	__u32 factor = 1;
	__u32 diff = htcp_cong_time(ca);

	/* α(Δ) = 1 + 10(Δ−Δ_L) + ((Δ−Δ_L)/2)^2 for Δ > Δ_L = 1 s (here in jiffies, HZ = 1 s) */
	if (diff > HZ) {
		diff -= HZ;
		factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / HZ)) / HZ;
	}

	if (use_rtt_scaling && minRTT) {
		__u32 scale = (HZ << 3) / (10 * minRTT);

		/* clamping ratio to interval [0.5,10]<<3 */
		scale = min(max(scale, 1U << 2), 10U << 3);
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}

	ca->alpha = 2 * factor * ((1 << 7) - ca->beta);
	if (!ca->alpha)
		ca->alpha = ALPHA_BASE;
}

static __always_inline void htcp_param_update(struct sock *sk)
{
	struct tp_htcp *ca = inet_csk_ca(sk);
	__u32 minRTT = ca->minRTT;
	__u32 maxRTT = ca->maxRTT;

	htcp_beta_update(ca, minRTT, maxRTT);
	htcp_alpha_update(ca);

	/* add slowly fading memory for maxRTT to accommodate routing changes */
	if (minRTT > 0 && maxRTT > minRTT)
		ca->maxRTT = minRTT + ((maxRTT - minRTT) * 95) / 100;
}

SEC("struct_ops")
__u32 BPF_PROG(htcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct tp_htcp *ca = inet_csk_ca(sk);

	htcp_param_update(sk);
	return max((tp->snd_cwnd * ca->beta) >> 7, 2U);
}

SEC("struct_ops")
void BPF_PROG(htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_htcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else {
		/* In theory this is tp->snd_cwnd += alpha / tp->snd_cwnd */
		if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
			if (tp->snd_cwnd < tp->snd_cwnd_clamp)
				tp->snd_cwnd++;
			tp->snd_cwnd_cnt = 0;
			htcp_alpha_update(ca);
		} else {
			tp->snd_cwnd_cnt += ca->pkts_acked;
		}
		ca->pkts_acked = 1;
	}
}

SEC("struct_ops")
void BPF_PROG(htcp_init, struct sock *sk)
{
	struct tp_htcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = ALPHA_BASE;
	ca->beta = BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = tp_jiffies32();
}

SEC("struct_ops")
void BPF_PROG(htcp_state, struct sock *sk, __u8 new_state)
{
	struct tp_htcp *ca = inet_csk_ca(sk);

	switch (new_state) {
	case TCP_CA_Open:
		if (ca->undo_last_cong) {
			ca->last_cong = tp_jiffies32();
			ca->undo_last_cong = 0;
		}
		break;
	case TCP_CA_CWR:
	case TCP_CA_Recovery:
	case TCP_CA_Loss:
		htcp_reset(ca);
		break;
	}
}

SEC(".struct_ops")
struct tcp_congestion_ops tp_htcp = {
	.init = (void *)htcp_init,
	.ssthresh = (void *)htcp_recalc_ssthresh,
	.cong_avoid = (void *)htcp_cong_avoid,
	.set_state = (void *)htcp_state,
	.undo_cwnd = (void *)htcp_cwnd_undo,
	.pkts_acked = (void *)htcp_pkts_acked,
	.name = "tp_htcp",
};
