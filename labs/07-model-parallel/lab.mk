# labs/07-model-parallel/lab.mk: chapter 7's lab (model parallelism), its trace
# report, exercises and figure; included by the Makefile.
#   make figures-07   the pipeline's bubble at M = 1, 2, 4, 8 from real runs (ch7-bubble.csv, .svg)
LAB07        := $(BUILD)/labs/07-model-parallel/model_parallel
LAB07_REPORT := $(BUILD)/labs/07-model-parallel/trace_report

# The lab is one program of three files (the splits in headers).
$(LAB07): $(LAB_COMMON) labs/07-model-parallel/pipeline.h labs/07-model-parallel/tensor_split.h
$(LAB07_REPORT): labs/tools/trace_events.h
# tests/test_lab07 runs the lab and its trace report.
$(BUILD)/tests/test_lab07: $(LAB07) $(LAB07_REPORT)
