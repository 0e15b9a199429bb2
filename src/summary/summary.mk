# src/summary/summary.mk: event files for TensorBoard (src/summary/), part of
# the core archive: a FileWriter is core TensorFlow, every lab writes one, and
# it needs only libprotobuf-c (about 60 KB). protoc-c compiles event.proto
# into $(BUILD)/gen/summary/ at build time (never committed).
SUMMARY_GEN := $(BUILD)/gen/summary
SUMMARY_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(wildcard src/summary/*.c)) $(BUILD)/obj/summary/event.pb-c.o
LDLIBS += -lprotobuf-c

$(SUMMARY_GEN)/event.pb-c.c $(SUMMARY_GEN)/event.pb-c.h: src/summary/event.proto
	@mkdir -p $(SUMMARY_GEN)
	protoc-c --proto_path=src/summary --c_out=$(SUMMARY_GEN) $<

$(BUILD)/obj/summary/event.pb-c.o: $(SUMMARY_GEN)/event.pb-c.c $(SUMMARY_GEN)/event.pb-c.h | $(BUILD)/obj
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(SUMMARY_GEN) -c $< -o $@

$(SUMMARY_OBJ): CFLAGS += -I$(SUMMARY_GEN)
$(filter-out $(BUILD)/obj/summary/event.pb-c.o,$(SUMMARY_OBJ)): $(SUMMARY_GEN)/event.pb-c.h src/summary/summary_internal.h

# tests/test_summary.c reads the records back with the generated decoder.
$(BUILD)/tests/test_summary: CFLAGS += -I$(SUMMARY_GEN) -Isrc/summary
$(BUILD)/tests/test_summary: $(SUMMARY_GEN)/event.pb-c.h src/summary/summary_internal.h
