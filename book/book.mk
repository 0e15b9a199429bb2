# book/book.mk: the book's quotes checked against the labs, its schematics,
# its program output and its HTML; included by the Makefile.
#   make book-check     the book's code quotes must equal the labs' marked regions,
#                       its output blocks their files; then make book-rerun
#   make book-rerun     reruns every quick output block (labs/tools/book-outputs.sh --rerun)
#                       and compares it with its stored file, as its marker says:
#                       (rerun: exact), (rerun: within R) or (rerun: no); BOOK_OUTPUTS=PREFIX
#                       reruns only the names that start with PREFIX
#   make book-sync      rewrites the book's code quotes from the labs
#   make book-outputs   book/outputs/*.txt from short real runs of the labs (labs/tools/book-outputs.sh;
#                       not part of `make test`; regenerate by hand, like figures; BOOK_OUTPUTS=01-
#                       for chapter 1's only); then `make book-sync`
#                       copies them into the chapters, and `make book-check` fails while a block differs
#   make book-html      the chapters and their figures as HTML pages in build/book-html/ (pandoc);
#                       open build/book-html/index.html. tests/test_book_html builds it in `make test`,
#                       tests/test_figures renders every figure the book includes (rsvg-convert)
BOOK_CHECK  := $(BUILD)/labs/tools/book_check
BOOK_MD      = $(wildcard book/*.md)
.PHONY: book-check book-rerun book-sync book-outputs book-html

book-check: $(BOOK_CHECK)
	./$(BOOK_CHECK) $(BOOK_MD)
	$(MAKE) book-rerun

book-rerun: labs $(EX01_OUT)/check_dense_layer $(BOOK_CHECK)
	sh labs/tools/book-outputs.sh --rerun

# book_check is one program in labs/tools/, one concept per header.
$(BOOK_CHECK): $(wildcard labs/tools/book_*.h)

book-sync: $(BOOK_CHECK)
	./$(BOOK_CHECK) --write $(BOOK_MD)

book-outputs: labs $(EX01_OUT)/check_dense_layer $(BOOK_CHECK)
	sh labs/tools/book-outputs.sh

book-html:
	sh labs/tools/book-html.sh $(BUILD)/book-html

# The book's schematics, drawn from hand-written Graphviz (one concept each;
# not runs of a lab): chapter 0's two kinds of parallelism, chapter 2's copies.
SCHEMATICS := $(FIGURES_DIR)/ch0-parallelism.svg $(FIGURES_DIR)/ch2-copies.svg
figures: $(SCHEMATICS)
$(SCHEMATICS): $(FIGURES_DIR)/%.svg: book/figures/%.dot
	@mkdir -p $(dir $@)
	dot -Tsvg $< -o $@
