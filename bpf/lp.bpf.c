// SPDX-License-Identifier: GPL-2.0-only
/* TCP Low Priority (Kuzmanovic & Knightly) as a BPF struct_ops congestion control, registered
 * as "tp_lp".
 *
 * Ported from Linux net/ipv4/tcp_lp.c as of v6.18 (TCP_TS_HZ = 1000 timestamps,
 * tcp_time_stamp_ts(tp), pkts_acked(sk, const struct ack_sample *), undo_cwnd =
 * tcp_reno_undo_cwnd).  The torvalds/linux blob read for reference, commit 15c54033964a, is
 * the 2.6-era file with the same estimator; the v6.7 change to tcp_time_stamp_ts() was read
 * as a patch in the code corpus.
 *
 * Differences from the C original (all of them):
 *  1. tcp_time_stamp_ts(tp) is reimplemented: tp->tcp_mstamp (µs) when the tcp_usec_ts bit is
 *     set, else tcp_mstamp / 1000 (ms), exactly as include/net/tcp.h does.
 *  2. Arithmetic keeps the original's C types: u32 products/divisions (which can wrap as in
 *     the original) and s64 only where the original uses it; no signed 64-bit division
 *     is needed (clang 14 cannot emit it) because every division in the original has unsigned
 *     operands.
 *  3. pr_debug() is omitted.
 *  4. tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes; ssthresh/undo_cwnd/cong_avoid
 *     fallbacks are BPF programs calling the tcp_reno_* kfuncs.
 *  5. Private state struct named tp_lp.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

#define TCP_TS_HZ 1000
#define LP_RESOL TCP_TS_HZ /* resolution of owd */

enum tp_lp_state {
	LP_VALID_RHZ = (1 << 0),  /* is remote HZ valid? */
	LP_VALID_OWD = (1 << 1),  /* is OWD valid? */
	LP_WITHIN_THR = (1 << 3), /* are we within threshold? */
	LP_WITHIN_INF = (1 << 4), /* are we within inference? */
};

struct tp_lp {
	__u32 flag;
	__u32 sowd;            /* smoothed OWD << 3 */
	__u32 owd_min;
	__u32 owd_max;
	__u32 owd_max_rsv;
	__u32 remote_hz;       /* estimated remote HZ */
	__u32 remote_ref_time;
	__u32 local_ref_time;
	__u32 last_drop;       /* time for last active drop */
	__u32 inference;       /* current inference */
};

static __always_inline __u32 tcp_time_stamp_ts(const struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, tcp_usec_ts))
		return (__u32)tp->tcp_mstamp;
	return (__u32)(tp->tcp_mstamp / USEC_PER_MSEC);
}

SEC("struct_ops")
void BPF_PROG(lp_init, struct sock *sk)
{
	struct tp_lp *lp = inet_csk_ca(sk);

	lp->flag = 0;
	lp->sowd = 0;
	lp->owd_min = 0xffffffff;
	lp->owd_max = 0;
	lp->owd_max_rsv = 0;
	lp->remote_hz = 0;
	lp->remote_ref_time = 0;
	lp->local_ref_time = 0;
	lp->last_drop = 0;
	lp->inference = 0;
}

/* Only call newReno CA when away from inference. */
SEC("struct_ops")
void BPF_PROG(lp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tp_lp *lp = inet_csk_ca(sk);

	if (!(lp->flag & LP_WITHIN_INF))
		tcp_reno_cong_avoid(sk, ack, acked);
}

/* Estimate remote HZ (63/64 old + 1/64 new), re-estimated on every ACK. */
static __always_inline __u32 lp_remote_hz_estimator(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_lp *lp = inet_csk_ca(sk);
	__s64 rhz = lp->remote_hz << 6; /* remote HZ << 6 (u32 shift, as in the original) */
	__s64 m = 0;

	if (lp->remote_ref_time == 0 || lp->local_ref_time == 0)
		goto out;

	if (tp->rx_opt.rcv_tsval == lp->remote_ref_time ||
	    tp->rx_opt.rcv_tsecr == lp->local_ref_time)
		goto out;

	/* u32 arithmetic as in the original (TCP_TS_HZ * u32 / u32), hence never negative */
	m = TCP_TS_HZ * (tp->rx_opt.rcv_tsval - lp->remote_ref_time) /
	    (tp->rx_opt.rcv_tsecr - lp->local_ref_time);

	if (rhz > 0) {
		m -= rhz >> 6; /* m is now error in remote HZ est */
		rhz += m;      /* 63/64 old + 1/64 new */
	} else {
		rhz = m << 6;
	}

out:
	if ((rhz >> 6) > 0)
		lp->flag |= LP_VALID_RHZ;
	else
		lp->flag &= ~LP_VALID_RHZ;

	lp->remote_ref_time = tp->rx_opt.rcv_tsval;
	lp->local_ref_time = tp->rx_opt.rcv_tsecr;

	return rhz >> 6;
}

/* One-way delay in relative format (remote clock − local clock, in LP_RESOL units). */
static __always_inline __u32 lp_owd_calculator(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_lp *lp = inet_csk_ca(sk);
	__s64 owd = 0;

	lp->remote_hz = lp_remote_hz_estimator(sk);

	if (lp->flag & LP_VALID_RHZ) {
		/* u32 expression as in the original, hence never negative */
		owd = tp->rx_opt.rcv_tsval * (LP_RESOL / lp->remote_hz) -
		      tp->rx_opt.rcv_tsecr * (LP_RESOL / TCP_TS_HZ);
	}

	if (owd > 0)
		lp->flag |= LP_VALID_OWD;
	else
		lp->flag &= ~LP_VALID_OWD;

	return owd;
}

/* calc OWD, record min/max OWD, smoothed OWD (sowd = 7/8 sowd + 1/8 new) */
static __always_inline void lp_rtt_sample(struct sock *sk)
{
	struct tp_lp *lp = inet_csk_ca(sk);
	__s64 mowd = lp_owd_calculator(sk);

	if (!(lp->flag & LP_VALID_RHZ) || !(lp->flag & LP_VALID_OWD))
		return;

	if (mowd < lp->owd_min)
		lp->owd_min = mowd;

	/* always forget the max of the max: set owd_max as one below it */
	if (mowd > lp->owd_max) {
		if (mowd > lp->owd_max_rsv) {
			if (lp->owd_max_rsv == 0)
				lp->owd_max = mowd;
			else
				lp->owd_max = lp->owd_max_rsv;
			lp->owd_max_rsv = mowd;
		} else {
			lp->owd_max = mowd;
		}
	}

	if (lp->sowd != 0) {
		mowd -= lp->sowd >> 3; /* m is now error in owd est */
		lp->sowd += mowd;      /* owd = 7/8 owd + 1/8 new */
	} else {
		lp->sowd = mowd << 3; /* take the measured time be owd */
	}
}

/* Early congestion indication: halve cwnd, or drop it to 1 within the inference time. */
SEC("struct_ops")
void BPF_PROG(lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_lp *lp = inet_csk_ca(sk);
	__u32 now = tcp_time_stamp_ts(tp);
	__u32 delta;

	if (sample->rtt_us > 0)
		lp_rtt_sample(sk);

	/* calc inference */
	delta = now - tp->rx_opt.rcv_tsecr;
	if ((__s32)delta > 0)
		lp->inference = 3 * delta;

	/* test if within inference */
	if (lp->last_drop && (now - lp->last_drop < lp->inference))
		lp->flag |= LP_WITHIN_INF;
	else
		lp->flag &= ~LP_WITHIN_INF;

	/* test if within threshold: sowd < owd_min + 15 % (owd_max − owd_min) */
	if (lp->sowd >> 3 < lp->owd_min + 15 * (lp->owd_max - lp->owd_min) / 100)
		lp->flag |= LP_WITHIN_THR;
	else
		lp->flag &= ~LP_WITHIN_THR;

	if (lp->flag & LP_WITHIN_THR)
		return;

	/* FIXME (original): reset owd_min/owd_max so they stay suitable */
	lp->owd_min = lp->sowd >> 3;
	lp->owd_max = lp->sowd >> 2;
	lp->owd_max_rsv = lp->sowd >> 2;

	if (lp->flag & LP_WITHIN_INF)
		tp->snd_cwnd = 1U; /* happened within inference: drop snd_cwnd into 1 */
	else
		tp->snd_cwnd = max(tp->snd_cwnd >> 1U, 1U); /* after inference: halve */

	lp->last_drop = now;
}

SEC("struct_ops")
__u32 BPF_PROG(lp_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

TP_RENO_UNDO(lp)

SEC(".struct_ops")
struct tcp_congestion_ops tp_lp = {
	.init = (void *)lp_init,
	.ssthresh = (void *)lp_ssthresh,
	.undo_cwnd = (void *)lp_undo_cwnd,
	.cong_avoid = (void *)lp_cong_avoid,
	.pkts_acked = (void *)lp_pkts_acked,
	.name = "tp_lp",
};
