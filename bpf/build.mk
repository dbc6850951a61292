# bpf/build.mk: BPF congestion-control objects (filled in by the BPF work).
