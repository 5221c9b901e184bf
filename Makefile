# uraid: plain GNU Makefile.
#   make          liburaid.a, liburaid.so and the uraid command (in build/)
#   make check    the layer check, then every test, including an ASan+UBSan build of the unit tests
#   make layers   no file includes a header of a layer above it (docs/ARCHITECTURE.md)
#   make demo     the project's main job, explained as it runs
#   make fuzz     the superblock decoder under libFuzzer (FUZZ_SECONDS=60)
#   make bench    the parity benchmark table

CC      ?= gcc
CFLAGS  ?= -O2 -g
WARN    := -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-format-zero-length
# The library and its white-box tests see lib/'s internal headers; the
# front-ends (cli/, fuse/, plugins/) see only the public ones in include/, so
# the compiler enforces the layers' top rule (FRONT_CPPFLAGS below).
CPPFLAGS += -Iinclude -Ilib -Itests/lib -D_GNU_SOURCE
FRONT_CPPFLAGS := -Iinclude -D_GNU_SOURCE
# liburaid.so exports only what include/ marks URAID_API.
LIB_VISIBILITY := -fvisibility=hidden
VERSION := 0.1.0
SONAME  := liburaid.so.$(firstword $(subst ., ,$(VERSION)))
LDLIBS  := -lpthread -lm

BUILD   := build
SAN     := $(BUILD)/san
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# ThreadSanitizer, for the tests that run many threads on one array
TSAN     := $(BUILD)/tsan
TSANFLAGS := -O1 -g -fsanitize=thread

# ISA-L is optional: when its header is present the 'isal' parity candidate is
# built and linked, so benchmarks compare against it in the same run.
HAVE_ISAL := $(shell test -f /usr/include/isa-l.h && echo 1)
ifeq ($(HAVE_ISAL),1)
CPPFLAGS += -DHAVE_ISAL
LDLIBS   += -lisal
endif

# liburing is optional: without it the I/O engine runs every request on its
# thread pool.
HAVE_URING := $(shell test -f /usr/include/liburing.h && echo 1)
ifeq ($(HAVE_URING),1)
CPPFLAGS += -DHAVE_URING
LDLIBS   += -luring
endif

# libnbd lets members be NBD exports (lib/member/nbd.c); without it an NBD
# URI is refused with a message naming the missing package.
HAVE_LIBNBD := $(shell pkg-config --exists libnbd 2>/dev/null && echo 1)
ifeq ($(HAVE_LIBNBD),1)
CPPFLAGS += -DHAVE_LIBNBD $(shell pkg-config --cflags libnbd)
LDLIBS   += $(shell pkg-config --libs libnbd)
endif

LIB_SRC  := $(sort $(shell find lib -name '*.c'))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TESTLIB_SRC := $(sort $(wildcard tests/lib/*.c))
FUSE_SRC = $(if $(HAVE_FUSE3),$(sort $(wildcard fuse/*.c)))

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
FUSE_OBJ = $(FUSE_SRC:%.c=$(BUILD)/%.o)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
SAN_LIB_OBJ := $(LIB_SRC:%.c=$(SAN)/%.o)
SAN_TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(SAN)/%.o)
SAN_TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(SAN)/tests/%)
TSAN_LIB_OBJ := $(LIB_SRC:%.c=$(TSAN)/%.o)
TSAN_TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(TSAN)/%.o)
TSAN_TEST_BIN := $(addprefix $(TSAN)/tests/,test_bitmap test_faults test_rebuild test_scrub test_nbd test_nbd_far test_nbd_hold test_nbd_merge test_stripe test_recovery test_ppl test_powercut test_crash test_raid10_array test_reshape_io test_reshape_level_online test_gather test_grow_mirrors test_grow_linear_online test_grow_raid0_online test_grow_size_online test_ppl_stale test_takeover_online test_takeover_raid0_online test_takeover_from_raid0 test_reshape_ahead test_grow_badblocks test_ppl_cut6 test_ppl_linger)

# Each SIMD family is compiled with its own instruction-set flags and only
# runs after its valid() check, so the rest of the code stays baseline x86-64.
simd_flags = $(strip \
  $(if $(filter %/avx2.c,$1),-mavx2) \
  $(if $(filter %/avx512.c,$1),-mavx512f -mavx512bw -mavx512vl) \
  $(if $(filter %/gfni.c %/gfni_nt.c,$1),-mavx512f -mavx512bw -mavx512vl -mgfni))

# Front-ends (issue 5): the nbdkit plugin, built when nbdkit's header is
# present; FUSE support in the uraid command when libfuse3 is present.
HAVE_NBDKIT := $(shell test -f /usr/include/nbdkit-plugin.h && echo 1)
HAVE_FUSE3 := $(shell pkg-config --exists fuse3 2>/dev/null && echo 1)
PLUGIN_SRC := $(sort $(wildcard plugins/nbdkit-*.c))
ifeq ($(HAVE_NBDKIT),1)
PLUGINS := $(PLUGIN_SRC:plugins/%.c=$(BUILD)/%.so)
endif
ifeq ($(HAVE_FUSE3),1)
CLI_FUSE_CFLAGS := -DHAVE_FUSE3 $(shell pkg-config --cflags fuse3)
CLI_FUSE_LIBS := $(shell pkg-config --libs fuse3)
endif

.PHONY: all check check-long layers demo fuzz bench bench-serve bench-seeds clean deps unit-tests san-tests crash-long
all: $(BUILD)/liburaid.a $(BUILD)/liburaid.so $(BUILD)/uraid $(PLUGINS)

$(BUILD)/nbdkit-%.so: plugins/nbdkit-%.c $(BUILD)/liburaid.a
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared $(FRONT_CPPFLAGS) -o $@ $< $(BUILD)/liburaid.a $(LDLIBS)

deps:
	@sh scripts/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC $(LIB_VISIBILITY) $(CPPFLAGS) $(call simd_flags,$<) -MMD -MP -c $< -o $@

$(SAN)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(SANFLAGS) $(CPPFLAGS) $(call simd_flags,$<) -MMD -MP -c $< -o $@

$(BUILD)/liburaid.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# liburaid.so.0.1.0 with its soname, and the usual links to it
$(BUILD)/liburaid.so.$(VERSION): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,-z,defs -o $@ $^ $(LDLIBS)

$(BUILD)/$(SONAME): $(BUILD)/liburaid.so.$(VERSION)
	ln -sf $(notdir $<) $@

$(BUILD)/liburaid.so: $(BUILD)/$(SONAME)
	ln -sf $(notdir $<) $@

$(SAN)/liburaid.a: $(SAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(TSAN)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(TSANFLAGS) $(CPPFLAGS) $(call simd_flags,$<) -MMD -MP -c $< -o $@

$(TSAN)/liburaid.a: $(TSAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# uraid serve --ublk talks to the kernel through io_uring: without liburing
# it is refused with a line naming the package.
$(BUILD)/cli/ublk_%.o: CLI_UBLK_CFLAGS := $(if $(HAVE_URING),-DHAVE_URING)

$(BUILD)/cli/%.o: cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(FRONT_CPPFLAGS) -Ifuse $(CLI_FUSE_CFLAGS) $(CLI_UBLK_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/fuse/%.o: fuse/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(FRONT_CPPFLAGS) $(CLI_FUSE_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/uraid: $(CLI_OBJ) $(FUSE_OBJ) $(BUILD)/liburaid.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(FUSE_OBJ) $(BUILD)/liburaid.a $(LDLIBS) $(CLI_FUSE_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TESTLIB_OBJ) $(BUILD)/liburaid.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(TESTLIB_OBJ) $(BUILD)/liburaid.a $(LDLIBS)

$(SAN)/tests/%: $(SAN)/tests/unit/%.o $(SAN_TESTLIB_OBJ) $(SAN)/liburaid.a
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -o $@ $< $(SAN_TESTLIB_OBJ) $(SAN)/liburaid.a $(LDLIBS)

$(TSAN)/tests/%: $(TSAN)/tests/unit/%.o $(TSAN_TESTLIB_OBJ) $(TSAN)/liburaid.a
	@mkdir -p $(dir $@)
	$(CC) $(TSANFLAGS) -o $@ $< $(TSAN_TESTLIB_OBJ) $(TSAN)/liburaid.a $(LDLIBS)

unit-tests: $(TEST_BIN)
san-tests: $(SAN_TEST_BIN)
tsan-tests: $(TSAN_TEST_BIN)

layers:
	@sh scripts/check-layers.sh

# Builds with one job per CPU and runs the tests two at a time
# (URAID_TEST_JOBS, tests/run.sh).
NPROC := $(shell nproc 2>/dev/null || echo 2)
check: deps layers
	@$(MAKE) --no-print-directory -j$(NPROC) all unit-tests san-tests tsan-tests
	@bash tests/run.sh

# The long mode: make check with every matrix at full size (URAID_TEST_LONG=1:
# every md layout and format against the real md, the long reshape and crash
# trials), then the crash trials at full length. Takes an hour or more.
check-long: deps layers
	@$(MAKE) --no-print-directory -j$(NPROC) all unit-tests san-tests tsan-tests
	@URAID_TEST_LONG=1 bash tests/run.sh
	@$(MAKE) --no-print-directory crash-long

demo: deps
	@$(MAKE) --no-print-directory all
	@sh scripts/demo.sh

bench: all
	$(BUILD)/uraid bench parity

# The served array (NBD) beside nbdkit's file plugin and btrfs raid6, with fio
# (SECONDS_PER_JOB=10 per job and target; about 3 minutes).
bench-serve: all
	@sh bench/fio_nbd.sh

# The linux-raid threads' experiments on simulated disks (bench/seeds/run.sh):
# report and plots in SEEDS_OUT (about 30 minutes; SEEDS_QUICK=1: a few).
SEEDS_OUT ?= bench/seeds/report
bench-seeds: all
	$(BUILD)/uraid bench seeds $(if $(SEEDS_QUICK),--quick) --out $(SEEDS_OUT)

# The crash trials at full length (docs/CRASH.md): CRASH_TRIALS per level,
# state, policy and kind of crash instead of make check's 3.
CRASH_TRIALS ?= 200
crash-long: all unit-tests
	URAID_CRASH_TRIALS=$(CRASH_TRIALS) $(BUILD)/tests/test_crash

FUZZ_SECONDS ?= 60
fuzz: deps
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(FUSE_OBJ:.o=.d) $(TESTLIB_OBJ:.o=.d) $(SAN_LIB_OBJ:.o=.d)
-include $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%.d) $(TEST_SRC:tests/unit/%.c=$(SAN)/tests/unit/%.d)
-include $(TSAN_LIB_OBJ:.o=.d) $(TSAN_TESTLIB_OBJ:.o=.d) $(TEST_SRC:tests/unit/%.c=$(TSAN)/tests/unit/%.d)

# ---- Installing (issue 14 item 2): make install / make uninstall / make deb ----
# PREFIX and DESTDIR as usual; the nbdkit plugin goes where the installed
# nbdkit looks for plugins (so `nbdkit uraid member=...` finds it), which is
# not under PREFIX. `make deb` builds the Debian packages in a copy of the
# tree (build/deb/) so that dpkg-buildpackage's clean step leaves build/ alone.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
# uraid bench seeds' driver, found at BINDIR/../share/uraid/seeds
SEEDSDIR     ?= $(PREFIX)/share/uraid/seeds
SEEDS_SCRIPTS := $(sort $(wildcard bench/seeds/*.sh))
# systemd units (contrib/systemd/): uraid@.service, uraid-monitor.service,
# uraid-check.service and .timer; their ExecStart names BINDIR's uraid
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSTEMD_UNITS := $(sort $(wildcard contrib/systemd/*.service contrib/systemd/*.timer))
NBDKIT_PLUGINDIR ?= $(or $(shell nbdkit --dump-config 2>/dev/null | sed -n 's/^plugindir=//p'),$(LIBDIR)/nbdkit/plugins)
INSTALL    ?= install
PUBLIC_HEADERS := $(sort $(wildcard include/*.h))
# docs/uraid.1, and any page of another section (uraid.conf.5) once it exists
MAN_PAGES := $(sort $(wildcard docs/*.[1-8]))
# every file install puts down, for uninstall
INSTALLED = $(BINDIR)/uraid $(LIBDIR)/liburaid.so.$(VERSION) $(LIBDIR)/$(SONAME) $(LIBDIR)/liburaid.so \
  $(LIBDIR)/liburaid.a $(PUBLIC_HEADERS:include/%=$(INCLUDEDIR)/%) $(PKGCONFIGDIR)/liburaid.pc \
  $(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $m))/$(notdir $m)) $(BASHCOMPDIR)/uraid \
  $(SYSTEMD_UNITS:contrib/systemd/%=$(SYSTEMDUNITDIR)/%) $(if $(PLUGINS),$(NBDKIT_PLUGINDIR)/nbdkit-uraid-plugin.so) \
  $(SEEDS_SCRIPTS:bench/seeds/%=$(SEEDSDIR)/%)

.PHONY: install uninstall deb
# Regenerated by every install: PREFIX/LIBDIR may differ from the last one.
# Libs.private: the optional libraries this build linked (HAVE_ISAL, ...).
$(BUILD)/liburaid.pc: liburaid.pc.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS_PRIVATE@|$(strip $(LDLIBS))|' $< >$@

FORCE:

install: all $(BUILD)/liburaid.pc
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0755 $(BUILD)/uraid $(DESTDIR)$(BINDIR)/uraid
	$(INSTALL) -m 0755 $(BUILD)/liburaid.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liburaid.so.$(VERSION)
	ln -sfn liburaid.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/liburaid.so
	$(INSTALL) -m 0644 $(BUILD)/liburaid.a $(DESTDIR)$(LIBDIR)/liburaid.a
	$(INSTALL) -m 0644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	$(INSTALL) -m 0644 $(BUILD)/liburaid.pc $(DESTDIR)$(PKGCONFIGDIR)/liburaid.pc
	$(foreach m,$(MAN_PAGES),$(INSTALL) -d $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $m)) && \
	    $(INSTALL) -m 0644 $m $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $m))/ &&) true
	$(INSTALL) -m 0644 contrib/uraid.bash-completion $(DESTDIR)$(BASHCOMPDIR)/uraid
	$(INSTALL) -d $(DESTDIR)$(SEEDSDIR)
	$(INSTALL) -m 0644 $(SEEDS_SCRIPTS) $(DESTDIR)$(SEEDSDIR)/
	$(INSTALL) -d $(DESTDIR)$(SYSTEMDUNITDIR)
	$(foreach u,$(SYSTEMD_UNITS),sed 's|/usr/bin/uraid|$(BINDIR)/uraid|g' $u >$(DESTDIR)$(SYSTEMDUNITDIR)/$(notdir $u) && \
	    chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$(notdir $u) &&) true
ifneq ($(PLUGINS),)
	$(INSTALL) -d $(DESTDIR)$(NBDKIT_PLUGINDIR)
	$(INSTALL) -m 0755 $(BUILD)/nbdkit-uraid-plugin.so $(DESTDIR)$(NBDKIT_PLUGINDIR)/nbdkit-uraid-plugin.so
endif

# Only the files install wrote; directories stay (others may share them).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

DEB_DIR := $(BUILD)/deb
deb:
	@v=$$(sed -n '1s/^uraid (\([^)]*\)).*/\1/p' debian/changelog); [ "$$v" = "$(VERSION)" ] || \
	    { echo "make deb: debian/changelog is at $$v but the Makefile's VERSION is $(VERSION); add a changelog entry for $(VERSION)" >&2; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/uraid-$(VERSION)
	tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $(DEB_DIR)/uraid-$(VERSION)
	cd $(DEB_DIR)/uraid-$(VERSION) && dpkg-buildpackage -us -uc -b -j2
	@ls $(DEB_DIR)/*.deb
