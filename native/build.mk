# native/build.mk: the delay engine (native/delayd) -> build/delayd.
MNL_CFLAGS := $(shell pkg-config --cflags libmnl)
MNL_LIBS := $(shell pkg-config --libs libmnl)
DELAYD_CFLAGS := -O2 -g -Wall -Wextra -Werror -std=gnu11

BUILD_TARGETS += $(BUILD)/delayd

$(BUILD)/delayd: native/delayd/delayd.c
	@mkdir -p $(BUILD)
	$(CC) $(DELAYD_CFLAGS) $(MNL_CFLAGS) -o $@ $< $(MNL_LIBS) -pthread
