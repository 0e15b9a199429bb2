# src/install.mk: make install PREFIX=... [DESTDIR=...] and make uninstall;
# included by the Makefile. Installs the public headers (PREFIX/include/flowlab/),
# both archives, the CUDA module where it was built (PREFIX/lib/flowlab/),
# the cluster's tools flowlab_server and launch_cluster (PREFIX/bin/: a task
# for an in-graph client, and a launcher of N ps and M workers), and
# flowlab.pc and flowlab-cluster.pc, so that a program outside this tree builds with
#   cc -std=c11 my_program.c $(pkg-config --cflags --libs flowlab)
# DESTDIR stages the files (for a package) without changing the paths they name.
PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL_LIB     := $(PREFIX)/lib
INSTALL_BIN     := $(PREFIX)/bin
INSTALL_TOOLS   := $(BUILD)/labs/tools/flowlab_server $(BUILD)/labs/tools/launch_cluster
INSTALL_INCLUDE := $(PREFIX)/include/flowlab
INSTALL_MODULES := $(INSTALL_LIB)/flowlab
INSTALL_PC      := $(INSTALL_LIB)/pkgconfig
PUBLIC_HEADERS  := src/flowlab.h src/flowlab_cluster.h src/flowlab_monitored.h src/flowlab_summary.h src/flowlab_pictures.h
STAGE           := $(BUILD)/install
# Every file install writes, which uninstall removes.
INSTALLED := $(patsubst src/%,$(INSTALL_INCLUDE)/%,$(PUBLIC_HEADERS)) \
             $(INSTALL_LIB)/libflowlab.a $(INSTALL_LIB)/libflowlab_cluster.a \
             $(INSTALL_PC)/flowlab.pc $(INSTALL_PC)/flowlab-cluster.pc \
             $(patsubst $(BUILD)/labs/tools/%,$(INSTALL_BIN)/%,$(INSTALL_TOOLS)) \
             $(if $(CUDA_MODULE),$(INSTALL_MODULES)/libflowlab_cuda.so)

.PHONY: install uninstall FORCE
FORCE:

# The pkg-config files name PREFIX and the link flags this build found
# (the backends add to LDLIBS); rewritten on every install, as PREFIX may change.
$(STAGE)/flowlab.pc: src/flowlab.pc.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(strip $(LDFLAGS) $(LDLIBS))|' $< > $@
$(STAGE)/flowlab-cluster.pc: src/flowlab-cluster.pc.in FORCE
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(strip $(CLUSTER_LDLIBS))|' $< > $@

# The core archive as installed: the CUDA probe inside it is compiled again
# to open the installed module, PREFIX/lib/flowlab/libflowlab_cuda.so, not
# this tree's (FLOWLAB_CUDA_MODULE still overrides both).
$(STAGE)/libflowlab.a: $(LIB) FORCE
	@mkdir -p $(STAGE)
	cp $(LIB) $@
ifneq ($(CUDA_MODULE),)
	$(CC) $(CFLAGS) -DFL_CUDA_MODULE='"$(INSTALL_MODULES)/libflowlab_cuda.so"' -c cuda/driver_probe.c \
	    -o $(STAGE)/cuda_driver_probe.o
	ar rcs $@ $(STAGE)/cuda_driver_probe.o
endif

install: lib $(STAGE)/libflowlab.a $(STAGE)/flowlab.pc $(STAGE)/flowlab-cluster.pc $(INSTALL_TOOLS)
	install -d $(DESTDIR)$(INSTALL_INCLUDE) $(DESTDIR)$(INSTALL_LIB) $(DESTDIR)$(INSTALL_PC) $(DESTDIR)$(INSTALL_BIN)
	install -m 755 $(INSTALL_TOOLS) $(DESTDIR)$(INSTALL_BIN)
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INSTALL_INCLUDE)
	install -m 644 $(STAGE)/libflowlab.a $(CLUSTER_LIB) $(DESTDIR)$(INSTALL_LIB)
	install -m 644 $(STAGE)/flowlab.pc $(STAGE)/flowlab-cluster.pc $(DESTDIR)$(INSTALL_PC)
ifneq ($(CUDA_MODULE),)
	install -d $(DESTDIR)$(INSTALL_MODULES)
	install -m 755 $(CUDA_MODULE) $(DESTDIR)$(INSTALL_MODULES)
endif

# Removes exactly the files install writes, then flowlab's own folders if empty.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(INSTALL_INCLUDE) $(if $(CUDA_MODULE),$(DESTDIR)$(INSTALL_MODULES)) 2>/dev/null
