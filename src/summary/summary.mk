# src/summary/summary.mk: event files for TensorBoard (src/summary/), part of
# the core archive: a FileWriter is core TensorFlow, every lab writes one, and
# it needs only libprotobuf-c (about 60 KB). protoc-c compiles event.proto and
# graph.proto (the GraphDef a task's partition travels in too) into
# $(BUILD)/gen/summary/ at build time (never committed).
SUMMARY_GEN   := $(BUILD)/gen/summary
SUMMARY_PB    := $(BUILD)/obj/summary/event.pb-c.o $(BUILD)/obj/summary/graph.pb-c.o
SUMMARY_PB_H  := $(SUMMARY_GEN)/event.pb-c.h $(SUMMARY_GEN)/graph.pb-c.h
SUMMARY_OBJ   := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(wildcard src/summary/*.c)) $(SUMMARY_PB)
LDLIBS += -lprotobuf-c

$(SUMMARY_GEN)/%.pb-c.c $(SUMMARY_GEN)/%.pb-c.h: src/summary/%.proto
	@mkdir -p $(SUMMARY_GEN)
	protoc-c --proto_path=src/summary --c_out=$(SUMMARY_GEN) $<

$(BUILD)/obj/summary/%.pb-c.o: $(SUMMARY_GEN)/%.pb-c.c $(SUMMARY_PB_H) | $(BUILD)/obj
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(SUMMARY_GEN) -c $< -o $@

$(SUMMARY_OBJ): CFLAGS += -I$(SUMMARY_GEN)
$(filter-out $(SUMMARY_PB),$(SUMMARY_OBJ)): $(SUMMARY_PB_H) src/summary/summary_internal.h src/summary/graph_def.h

# tests/test_summary.c reads the records back with the generated decoder.
$(BUILD)/tests/test_summary: CFLAGS += -I$(SUMMARY_GEN) -Isrc/summary
$(BUILD)/tests/test_summary: $(SUMMARY_PB_H) src/summary/summary_internal.h
