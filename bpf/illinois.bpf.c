// SPDX-License-Identifier: GPL-2.0-only
/* TCP-Illinois (Liu, Başar, Srikant, Perf. Eval. 2008) as a BPF struct_ops congestion control,
 * registered as "tp_illinois".
 *
 * Ported from Linux net/ipv4/tcp_illinois.c as of v6.18 (pkts_acked(sk, const struct
 * ack_sample *), undo_cwnd = tcp_reno_undo_cwnd); the torvalds/linux blob read for reference
 * is commit 0d946db93a62, whose alpha/beta/update rules are unchanged since.
 *
 * Differences from the C original (all of them):
 *  1. Module parameters win_thresh 15 and theta 5 are compile-time constants.
 *  2. get_info (Vegas-style RTT info) is omitted: struct_ops rejects it on this kernel.
 *     The original uses no Vegas code otherwise, so nothing else is copied.
 *  3. do_div(u64, u32) is a plain unsigned 64-bit division.
 *  4. tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes; undo_cwnd is a BPF program
 *     calling the tcp_reno_undo_cwnd kfunc.
 *  5. Private state struct named tp_illinois.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

#define ALPHA_SHIFT 7
#define ALPHA_SCALE (1u << ALPHA_SHIFT)
#define ALPHA_MIN ((3 * ALPHA_SCALE) / 10) /* ~0.3 */
#define ALPHA_MAX (10 * ALPHA_SCALE)       /* 10.0 */
#define ALPHA_BASE ALPHA_SCALE             /* 1.0 */
#define RTT_MAX (0xffffffffu / ALPHA_MAX)  /* 3.3 secs */

#define BETA_SHIFT 6
#define BETA_SCALE (1u << BETA_SHIFT)
#define BETA_MIN (BETA_SCALE / 8) /* 0.125 */
#define BETA_MAX (BETA_SCALE / 2) /* 0.5 */
#define BETA_BASE BETA_MAX

static const __u32 win_thresh = 15; /* window threshold for starting adaptive sizing */
static const __u32 theta = 5;       /* # of fast RTT's before full growth */

struct tp_illinois {
	__u64 sum_rtt;  /* sum of rtt's measured within last rtt */
	__u16 cnt_rtt;  /* # of rtts measured within last rtt */
	__u32 base_rtt; /* min of all rtt in usec */
	__u32 max_rtt;  /* max of all rtt in usec */
	__u32 end_seq;  /* right edge of current RTT */
	__u32 alpha;    /* Additive increase */
	__u32 beta;     /* Multiplicative decrease */
	__u16 acked;    /* # packets acked by current ACK */
	__u8 rtt_above; /* average rtt has gone above threshold */
	__u8 rtt_low;   /* # of rtts measurements below threshold */
};

static __always_inline void rtt_reset(struct sock *sk)
{
	struct tp_illinois *ca = inet_csk_ca(sk);

	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

SEC("struct_ops")
void BPF_PROG(illinois_init, struct sock *sk)
{
	struct tp_illinois *ca = inet_csk_ca(sk);

	ca->alpha = ALPHA_MAX;
	ca->beta = BETA_BASE;
	ca->base_rtt = 0x7fffffff;
	ca->max_rtt = 0;
	ca->acked = 0;
	ca->rtt_low = 0;
	ca->rtt_above = 0;
	rtt_reset(sk);
}

/* Measure RTT for each ack. */
SEC("struct_ops")
void BPF_PROG(illinois_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tp_illinois *ca = inet_csk_ca(sk);
	__s32 rtt_us = sample->rtt_us;
	__u32 rtt;

	ca->acked = sample->pkts_acked;

	/* dup ack, no rtt sample */
	if (rtt_us < 0)
		return;
	rtt = rtt_us;

	/* ignore bogus values, this prevents wraparound in alpha math */
	if (rtt > RTT_MAX)
		rtt = RTT_MAX;

	if (ca->base_rtt > rtt)
		ca->base_rtt = rtt;
	if (ca->max_rtt < rtt)
		ca->max_rtt = rtt;

	++ca->cnt_rtt;
	ca->sum_rtt += rtt;
}

/* Maximum queuing delay d_m [µs] */
static __always_inline __u32 max_delay(const struct tp_illinois *ca)
{
	return ca->max_rtt - ca->base_rtt;
}

/* Average queuing delay d_a [µs] */
static __always_inline __u32 avg_delay(const struct tp_illinois *ca)
{
	__u64 t = ca->sum_rtt;

	t /= ca->cnt_rtt;
	return t - ca->base_rtt;
}

/* α: 10 while d_a <= d_m/100 (after theta good RTTs), else k1/(k2 + d_a) down to 0.3 */
static __always_inline __u32 alpha(struct tp_illinois *ca, __u32 da, __u32 dm)
{
	__u32 d1 = dm / 100; /* Low threshold */

	if (da <= d1) {
		/* If never got out of low delay zone, then use max */
		if (!ca->rtt_above)
			return ALPHA_MAX;

		/* Wait for 5 good RTT's before allowing alpha to go alpha max. */
		if (++ca->rtt_low < theta)
			return ca->alpha;

		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return ALPHA_MAX;
	}

	ca->rtt_above = 1;

	/* alpha = k1 / (k2 + da), k1 = (dm−d1)·amin·amax/(amax−amin), k2 = (dm−d1)·amin/(amax−amin) − d1 */
	dm -= d1;
	da -= d1;
	return (dm * ALPHA_MAX) / (dm + (da * (ALPHA_MAX - ALPHA_MIN)) / ALPHA_MIN);
}

/* β: 1/8 while d_a <= d_m/10, 1/2 from d_a >= 0.8 d_m, linear in between */
static __always_inline __u32 beta(__u32 da, __u32 dm)
{
	__u32 d2, d3;

	d2 = dm / 10;
	if (da <= d2)
		return BETA_MIN;

	d3 = (8 * dm) / 10;
	if (da >= d3 || d3 <= d2)
		return BETA_MAX;

	/* b = k3 + k4·da, k3 = (bmin·d3 − bmax·d2)/(d3 − d2), k4 = (bmax − bmin)/(d3 − d2) */
	return (BETA_MIN * d3 - BETA_MAX * d2 + (BETA_MAX - BETA_MIN) * da) / (d3 - d2);
}

/* Update alpha and beta values once per RTT */
static __always_inline void update_params(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_illinois *ca = inet_csk_ca(sk);

	if (tp->snd_cwnd < win_thresh) {
		ca->alpha = ALPHA_BASE;
		ca->beta = BETA_BASE;
	} else if (ca->cnt_rtt > 0) {
		__u32 dm = max_delay(ca);
		__u32 da = avg_delay(ca);

		ca->alpha = alpha(ca, da, dm);
		ca->beta = beta(da, dm);
	}

	rtt_reset(sk);
}

/* In case of loss, reset to default values */
SEC("struct_ops")
void BPF_PROG(illinois_state, struct sock *sk, __u8 new_state)
{
	struct tp_illinois *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->alpha = ALPHA_BASE;
		ca->beta = BETA_BASE;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		rtt_reset(sk);
	}
}

/* Increase window in response to successful acknowledgment. */
SEC("struct_ops")
void BPF_PROG(illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_illinois *ca = inet_csk_ca(sk);

	if (after(ack, ca->end_seq))
		update_params(sk);

	/* RFC2861 only increase cwnd if fully utilized */
	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else {
		__u32 delta;

		/* snd_cwnd_cnt is # of packets since last cwnd increment */
		tp->snd_cwnd_cnt += ca->acked;
		ca->acked = 1;

		/* cwnd += alpha/cwnd per ACKed packet */
		delta = (tp->snd_cwnd_cnt * ca->alpha) >> ALPHA_SHIFT;
		if (delta >= tp->snd_cwnd) {
			tp->snd_cwnd = min(tp->snd_cwnd + delta / tp->snd_cwnd, (__u32)tp->snd_cwnd_clamp);
			tp->snd_cwnd_cnt = 0;
		}
	}
}

SEC("struct_ops")
__u32 BPF_PROG(illinois_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_illinois *ca = inet_csk_ca(sk);

	/* Multiplicative decrease: cwnd × (1 − β), β in [1/8, 1/2] */
	return max(tp->snd_cwnd - ((tp->snd_cwnd * ca->beta) >> BETA_SHIFT), 2U);
}

TP_RENO_UNDO(illinois)

SEC(".struct_ops")
struct tcp_congestion_ops tp_illinois = {
	.init = (void *)illinois_init,
	.ssthresh = (void *)illinois_ssthresh,
	.undo_cwnd = (void *)illinois_undo_cwnd,
	.cong_avoid = (void *)illinois_cong_avoid,
	.set_state = (void *)illinois_state,
	.pkts_acked = (void *)illinois_acked,
	.name = "tp_illinois",
};
