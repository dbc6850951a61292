# bpf/build.mk: BPF congestion-control objects (struct_ops tcp_congestion_ops), one per bpf/NAME.bpf.c.
# build/vmlinux.h is generated from the running kernel's BTF; objects go to build/bpf/NAME.bpf.o.
BPF_CLANG ?= clang
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BUILD_TARGETS += $(BPF_OBJS)

$(BUILD)/vmlinux.h: /sys/kernel/btf/vmlinux
	@mkdir -p $(BUILD)
	bpftool btf dump file $< format c > $@.tmp
	mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	@mkdir -p $(BUILD)/bpf
	$(BPF_CLANG) -target bpf -O2 -g -Wall -Werror -I$(BUILD) -Ibpf -c $< -o $@
