# labs/labs.mk: every chapter's lab program, the main lab, and make exercises over
# all chapters; included by the Makefile after each chapter's lab.mk.
# Chapter 6's lab is an MPI program of several files, built by mpicc in its own section.
LAB_SRC := $(filter-out labs/06-allreduce/%,$(wildcard labs/*/*.c))
LAB_BIN := $(patsubst labs/%.c,$(BUILD)/labs/%,$(LAB_SRC))

$(BUILD)/labs/%: labs/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# A task server (issue 25's tf.train.Server): a program of a cluster, so it
# links the cluster rooms' archive and libevent, as chapter 3's lab does.
$(BUILD)/labs/tools/flowlab_server: labs/tools/flowlab_server.c $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)

labs: $(LAB_BIN)
# tests/test_backend_module reads ldd of every lab and runs flowlab-devices.
$(BUILD)/tests/test_backend_module: $(LAB_BIN)

# The main lab, as the README's quick start runs it.
lab: deps
	$(MAKE) labs
	$(BUILD)/labs/01-single-device/single_device


# ==== make exercises: every chapter's checks against your files, in chapter order ====
# Failing checks are expected until you solve them; each FAIL line names the
# file to edit, and the exit status is non-zero while any exercise fails.
# $(call run_exercise_checks,CHAPTER,CHECKS) runs one chapter's checks, prints
# how many pass and records a failure in the shell variable `failed`.
run_exercise_checks = pass=0; for t in $(2); do if ./$$t; then pass=$$((pass + 1)); else failed=1; fi; done; \
	echo "chapter $(1): $$pass of $(words $(2)) exercises pass";

exercises: $(EX01_CHECKS) $(EX02_CHECKS) $(EX03_CHECKS) $(EX04_CHECKS) $(EX06_CHECKS) $(EX07_CHECKS)
	@failed=0; \
	 $(call run_exercise_checks,1,$(EX01_CHECKS)) \
	 $(call run_exercise_checks,2,$(EX02_CHECKS)) \
	 $(call run_exercise_checks,3,$(EX03_CHECKS)) \
	 $(call run_exercise_checks,4,$(EX04_CHECKS)) \
	 $(call run_exercise_checks,6,$(EX06_CHECKS)) \
	 $(call run_exercise_checks,7,$(EX07_CHECKS)) \
	 exit $$failed

# The same checks against the reference solutions: fails unless all pass.
# A hand-out (make handout) has no solutions: say so instead of a make error.
ifeq ($(wildcard labs/*/exercises/solutions),)
exercises-solutions:
	@echo "exercises-solutions: this tree has no labs/*/exercises/solutions/ (a hand-out?)" >&2; exit 1
else
exercises-solutions: $(EX01_SOLVED) $(EX02_SOLVED) $(EX03_SOLVED) $(EX04_SOLVED) $(EX06_SOLVED) $(EX07_SOLVED)
	@failed=0; \
	 $(call run_exercise_checks,1,$(EX01_SOLVED)) \
	 $(call run_exercise_checks,2,$(EX02_SOLVED)) \
	 $(call run_exercise_checks,3,$(EX03_SOLVED)) \
	 $(call run_exercise_checks,4,$(EX04_SOLVED)) \
	 $(call run_exercise_checks,6,$(EX06_SOLVED)) \
	 $(call run_exercise_checks,7,$(EX07_SOLVED)) \
	 exit $$failed
endif

# ==== make handout DEST=dir: a student's tree without the reference solutions ====
# labs/tools/handout.sh copies every file git knows of except
# labs/*/exercises/solutions/; tests/handout.t checks the result.
.PHONY: handout mark
handout:
	@sh labs/tools/handout.sh "$(DEST)"

# Marks a class: a hand-out per student outside this tree, with only the files
# a student edits copied in (book/for-instructors.md).
mark:
	@sh labs/tools/mark_submissions.sh "$(SUBMISSIONS)" "$(MARKING)"
