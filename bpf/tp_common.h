/* SPDX-License-Identifier: GPL-2.0 */
/* Shared idioms for tcpprofile's BPF congestion-control ports (struct_ops tcp_congestion_ops).
 *
 * Mirrors the small inline helpers of include/net/tcp.h and inet_connection_sock.h that BPF
 * programs cannot call, and declares the kfuncs this kernel exports to tcp_congestion_ops
 * programs.  Time: jiffies come from bpf_jiffies64(); HZ is read from the running kernel's
 * config (CONFIG_HZ, 250 on the project's machines).
 */
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

/* Bits of enum tcp_ca_state (TCPF_CA_* are not in this kernel's BTF). */
#define TP_CAF(state) (1u << (state))

extern unsigned long CONFIG_HZ __kconfig;
#define HZ ((__u32)CONFIG_HZ)
#define USEC_PER_SEC 1000000u
#define USEC_PER_MSEC 1000u
#define USEC_PER_JIFFY (USEC_PER_SEC / HZ)

/* kernel exports for tcp_congestion_ops programs (kfuncs) */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline __u8 tp_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

/* jiffies as the kernel's `jiffies` / tcp_jiffies32 (32-bit wrap) */
static __always_inline __u32 tp_jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

/* usecs_to_jiffies(): rounds up, as the kernel does when HZ divides USEC_PER_SEC */
static __always_inline __u32 tp_usecs_to_jiffies(__u32 us)
{
	return (us + USEC_PER_JIFFY - 1) / USEC_PER_JIFFY;
}

static __always_inline __u32 tp_msecs_to_jiffies(__u32 ms)
{
	return (ms * 1000u + USEC_PER_JIFFY - 1) / USEC_PER_JIFFY;
}

static __always_inline int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}
#define after(seq2, seq1) before(seq1, seq2)

static __always_inline int tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline int tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* If in slow start, ensure cwnd grows to twice what was ACKed. */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/* tcp_in_cwnd_reduction() / tcp_current_ssthresh() of include/net/tcp.h */
static __always_inline __u32 tcp_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (TP_CAF(tp_ca_state(sk)) & (TP_CAF(TCP_CA_CWR) | TP_CAF(TCP_CA_Recovery)))
		return tp->snd_ssthresh;
	return max(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

/* Every port registers under "tp_<name>" and uses the kernel's Reno undo unless noted. */
#define TP_RENO_UNDO(prefix)                                                    \
	SEC("struct_ops")                                                       \
	__u32 BPF_PROG(prefix##_undo_cwnd, struct sock *sk)                     \
	{                                                                       \
		return tcp_reno_undo_cwnd(sk);                                  \
	}

#endif /* TP_COMMON_H */
