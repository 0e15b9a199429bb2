#!/usr/bin/perl
# house_rules.t: the house's layout rules, checked on the tree (TAP, run
# by prove beside the C tests). Files stay under 500 lines and functions under
# 80; src/ names neither cl/ nor cuda/, and only src/host/ includes the host
# kernel list; no object files call each other in a cycle of any length (read
# from the symbols nm lists in the built libraries, so the rule holds for what
# is really linked);
# the core names nothing of the cluster rooms and no two folders depend on
# each other both ways (read from nm of the built objects); the programs of
# chapters 0-1 link no libevent (read from ldd).
use strict;
use warnings;

my $max_file_lines = 500;
my $max_function_lines = 80;
my $library = $ENV{FLOWLAB_LIB} // 'build/libflowlab.a';
my $build = $ENV{BUILD} // 'build';
(my $cluster_library = $library) =~ s{libflowlab\.a$}{libflowlab_cluster.a};
my $tests = 0;
my $failed = 0;

sub ok {
    my ($pass, $what, @diag) = @_;
    $tests++;
    $failed++ unless $pass;
    print(($pass ? 'ok' : 'not ok') . " $tests - $what\n");
    print "# $_\n" for @diag;
}

sub read_lines {
    my ($path) = @_;
    open(my $fh, '<', $path) or die "house_rules.t: cannot read $path: $!\n";
    my @lines = <$fh>;
    close $fh;
    return @lines;
}

# C, CUDA and OpenCL sources of the runtime and its backends.
my @runtime = grep { -f } (glob('src/*.[ch] src/*/*.[ch] src/*/*/*.[ch] cl/*.[ch] cl/*.cl cuda/*.[ch] cuda/*.cu cuda/*.cuh'));
# Host code whose functions are held to the 80-line rule: everything but the
# device kernels (*.cl, *.cu), which are long on purpose (unrolled tiles).
my @host_code = grep { !/\.(cl|cu|cuh)$/ } (@runtime, glob('labs/*/*.[ch] labs/*/*/*.[ch] labs/tools/*.[ch]'));

# ---- file sizes ----
my @long_files;
for my $path (@runtime) {
    my $n = () = read_lines($path);
    push @long_files, "$path: $n lines" if $n > $max_file_lines;
}
ok(!@long_files, "no file in src/, cl/, cuda/ over $max_file_lines lines", @long_files);

# ---- function lengths: the house style puts a function's braces in column 0 ----
my @long_functions;
for my $path (@host_code) {
    my @lines = read_lines($path);
    my ($open, $name) = (0, '');
    for my $i (0 .. $#lines) {
        $name = $1 if !$open && $lines[$i] =~ /^[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(/;
        if ($lines[$i] =~ /^\{/) {
            $open = $i + 1;
        } elsif ($lines[$i] =~ /^\}/ && $open) {
            my $length = $i + 1 - $open - 1;
            push @long_functions, "$path:$open: $name has $length lines" if $length > $max_function_lines;
            $open = 0;
        }
    }
}
ok(!@long_functions, "no function over $max_function_lines lines outside kernels", @long_functions);

# ---- includes ----
my (@backend_includes, @host_includes);
for my $path (grep { m{^src/} } @runtime) {
    my $line = 0;
    for (read_lines($path)) {
        $line++;
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        my $included = $1;
        push @backend_includes, "$path:$line includes $included" if $included =~ m{(^|/)(cl|cuda)/};
        push @host_includes, "$path:$line includes $included"
          if $included =~ /host_kernels\.h$/ && $path !~ m{^src/host/};
    }
}
ok(!@backend_includes, 'nothing under src/ includes a file from cl/ or cuda/', @backend_includes);
ok(!@host_includes, 'only src/host/ includes the host kernel list', @host_includes);

# ---- call cycles between object files, from the library's symbol tables ----
# An edge runs from an object to the object that defines a symbol it uses.
# An op's definition (fl_def_*) and a backend's table are data that register
# a piece with the registry, which calls back through them: not an edge.
sub is_registration {
    return $_[0] =~ /^fl_def_\w+$/ || $_[0] =~ /^fl_\w+_backend(?:_entry)?$/ || $_[0] =~ /^fl_cluster_\w+_plugin_table$/;
}

# Tarjan's strongly connected components: every cycle, of any length, lies
# inside one component of two or more objects.
sub components {
    my ($calls) = @_;
    my ($next, %index, %low, @stack, %on_stack, @found) = (0);
    my $visit;
    $visit = sub {
        my ($v) = @_;
        $index{$v} = $low{$v} = $next++;
        push @stack, $v;
        $on_stack{$v} = 1;
        for my $w (sort keys %{ $calls->{$v} // {} }) {
            if (!defined $index{$w}) {
                $visit->($w);
                $low{$v} = $low{$w} if $low{$w} < $low{$v};
            } elsif ($on_stack{$w} && $index{$w} < $low{$v}) {
                $low{$v} = $index{$w};
            }
        }
        return unless $low{$v} == $index{$v};
        my @component;
        while (1) {
            my $w = pop @stack;
            $on_stack{$w} = 0;
            push @component, $w;
            last if $w eq $v;
        }
        push @found, [sort @component] if @component > 1;
    };
    for my $v (sort keys %$calls) { $visit->($v) unless defined $index{$v} }
    return @found;
}

if (!-f $library) {
    print "ok " . ++$tests . " # SKIP $library is not built (make lib)\n";
} else {
    my (%defines, %uses, $object);
    for (`nm $library 2>/dev/null`, (-f $cluster_library ? `nm $cluster_library 2>/dev/null` : ())) {
        if (/^(\S+\.o):$/) { $object = $1; next; }
        next unless $object && /^\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$/;
        my ($type, $symbol) = ($1, $2);
        if ($type eq 'U') { $uses{$object}{$symbol} = 1 }
        elsif ($type =~ /[TDBR]/) { $defines{$symbol} = $object }
    }
    my %calls;
    for my $from (keys %uses) {
        for my $symbol (keys %{ $uses{$from} }) {
            my $to = $defines{$symbol};
            next if !$to || $to eq $from || is_registration($symbol);
            $calls{$from}{$to} //= $symbol;
        }
    }
    my @cycles;
    for my $component (components(\%calls)) {
        my %in = map { $_ => 1 } @$component;
        my @edges;
        for my $a (@$component) {
            push @edges, "$a uses $calls{$a}{$_}" for grep { $in{$_} } sort keys %{ $calls{$a} };
        }
        push @cycles, 'a cycle through ' . join(', ', @$component) . ': ' . join('; ', @edges);
    }
    ok(!@cycles, 'no object files of the libraries call each other in a cycle, of any length', @cycles);
}

# ---- folders: the core stands alone, and no two folders depend both ways ----
# A folder is src/, src/<room>/, cl/ or cuda/; an object's folder is read
# from its path under $build/obj (the backends' objects are cl_*.o, cuda_*.o).
sub folder_of {
    my ($object) = @_;
    return $1 if $object =~ m{/obj/(cl|cuda)(?:_|/)[^/]*$};
    return "src/$1" if $object =~ m{/obj/(\w+(?:/\w+)?)/[^/]+\.o$};
    return 'src';
}
my %cluster_rooms = map { $_ => 1 } qw(src/cluster src/distributed_runtime src/distributed_runtime/transport
    src/distributed_runtime/partition src/distributed_runtime/server src/distributed_runtime/ps);
# The seam's registration (is_registration above): the device registry names
# each backend's table (fl_host_backend, fl_opencl_backend, or the generated
# table's fl_cl_backend_entry) and every backend uses the core; that is how a
# backend plugs in, not a loop. A cluster plugs into a session the same way:
# its head names the distributed runtime's table for a task or a client
# (src/cluster/cluster_head.c names fl_cluster_task_plugin_table).
my @objects = grep { -f } glob("$build/obj/*.o $build/obj/*/*.o $build/obj/*/*/*.o");
if (!@objects) {
    print "ok " . ++$tests . " # SKIP $build/obj holds no objects (make lib)\n";
} else {
    my (%defined_in, %uses);
    for my $object (@objects) {
        for (`nm $object 2>/dev/null`) {
            next unless /^\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$/;
            my ($type, $symbol) = ($1, $2);
            if ($type eq 'U') { $uses{$object}{$symbol} = 1 }
            elsif ($type =~ /[TDBR]/) { $defined_in{$symbol} = folder_of($object) }
        }
    }
    my (@core_names_cluster, %depends);
    for my $object (sort keys %uses) {
        my $from = folder_of($object);
        for my $symbol (sort keys %{ $uses{$object} }) {
            my $to = $defined_in{$symbol};
            next unless $to && $to ne $from;
            push @core_names_cluster, "$object names $symbol ($to)" if $cluster_rooms{$to} && !$cluster_rooms{$from};
            $depends{$from}{$to} //= "$object names $symbol" unless is_registration($symbol);
        }
    }
    ok(!@core_names_cluster, 'no object outside src/cluster and src/distributed_runtime names a symbol of theirs',
       @core_names_cluster);
    my @both_ways;
    for my $a (sort keys %depends) {
        for my $b (sort keys %{ $depends{$a} }) {
            next unless $a lt $b && $depends{$b}{$a};
            push @both_ways, "$a -> $b ($depends{$a}{$b}) and $b -> $a ($depends{$b}{$a})";
        }
    }
    ok(!@both_ways, 'no two folders depend on each other both ways', @both_ways);
}

# ---- the session's state has owners (src/session_internal.h says which) ----
# Only the session's own files include its state, and each part's sub-struct
# of struct fl_session is touched in its owner alone (in code, not comments
# or strings); the others call the owner's functions or the header's inline
# accessors. The saver and the DOT writer go through session_access.h.
{
    my %owner = (run => 'session.c', fetch => 'session_fetch.c', reads => 'session_copies.c', trace => 'trace.c',
                 fusion => 'session_fusion.c', master => 'session_master.c', error => 'session_error.c');
    my $parts = join('|', sort keys %owner);
    my (@includers, @touches);
    for my $path (grep { m{^src/} } @runtime) {
        my $text = join('', read_lines($path));
        next unless $text =~ /#\s*include\s+"session_internal\.h"/;
        (my $file = $path) =~ s{^src/}{};
        push @includers, "$path includes session_internal.h" unless $file =~ /^(?:session\w*\.c|trace\.c)$/;
        $text =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"}{ $& =~ tr/\n//cdr }gse; # keeps the line numbers
        while ($text =~ /(?:->|\.)\s*($parts)\b(?!\s*\()/g) {
            my $part = $1;
            next if $owner{$part} eq $file;
            my $line = 1 + (() = substr($text, 0, pos $text) =~ /\n/g);
            push @touches, "$path:$line touches ->$part, which only $owner{$part} may";
        }
    }
    ok(!@includers, 'only the session\'s own files (session*.c, trace.c) include session_internal.h', @includers);
    ok(!@touches, 'each part of struct fl_session is touched only by its owner', @touches);
}

# ---- errors: one channel inside (issue 43) ----
# A function of the runtime reports a failure through fl_status (src/status.h): a
# canonical code and a message of a stated size. No parameter list in src/, cl/ or
# cuda/ host code takes a char buffer for the message (char *err, char *why,
# char errbuf[], ...), whose length the callee cannot know or must be told apart.
my $message_names = qr/err\w*|why\w*|errbuf|errmsg|error\w*|reason|msg|message/;
my @message_buffers;
for my $path (grep { m{^(?:src|cl|cuda)/} } @host_code) {
    my $text = join '', read_lines($path);
    $text =~ s{/\*.*?\*/}{"\n" x (() = $& =~ /\n/g)}gse; # comments out, their lines kept
    $text =~ s{//[^\n]*}{}g;
    $text =~ s{"(?:[^"\\\n]|\\.)*"}{""}g;
    while ($text =~ /[(,]\s*(?:unsigned\s+)?char\s*(?:\*\s*|\s+)($message_names)\s*(?:\[[^\]]*\]\s*)?[,)]/g) {
        my ($name, $at) = ($1, $-[1]);
        my $line = 1 + (() = substr($text, 0, $at) =~ /\n/g);
        push @message_buffers, "$path:$line: a char buffer $name for a message: take an fl_status * (src/status.h)";
    }
}
ok(!@message_buffers, 'no function in src/, cl/ or cuda/ takes a char buffer for its error message', @message_buffers);

# ---- line budgets: each room within its budget (make size prints the table) ----
{
    my @report = `perl tests/room_sizes.pl --check 2>&1`;
    ok($? == 0, 'every room holds no more lines than its budget in tests/line_budgets.txt',
       $? == 0 ? () : map { s/^# //r =~ s/\s+$//r } grep { /^# / } @report);
}

# ---- the core's programs: chapters 0-1 and flowlab-devices link no libevent ----
# (chapter 2's lab is also the client of a cluster in its cluster mode, so it links the cluster rooms)
for my $program (qw(labs/00-xor/xor labs/01-single-device/single_device labs/tools/flowlab-devices)) {
    my $path = "$build/$program";
    if (!-x $path) {
        ok(0, "$path links no libevent", "$path is not built (make labs)");
        next;
    }
    my @event = grep { /libevent/ } `ldd $path 2>&1`;
    ok(!@event, "$path links no libevent (the cluster rooms' library)", map { s/^\s+|\s+$//gr } @event);
    # A linker that drops unused libraries (--as-needed) would hide a link
    # line naming them: read make's own line for the program too.
    my ($line) = grep { / -o \Q$path\E / } `make -s -n -W $program.c $path BUILD=$build 2>/dev/null`;
    my $clean = $line && $line !~ /-levent|libflowlab_cluster/;
    ok($clean, "and its link line names neither libevent nor the cluster archive",
       $clean ? () : ($line // "make -n printed no link line for $path"));
}

# ---- a file a comment sends the reader to ("see" and a file, or a path from src/,
# cl/, cuda/, labs/, tests/ or book/) is there ----
# Resolved from the top of the tree, from the folders a comment names its
# neighbours by (src/, src/<room>/, cl/, cuda/, labs/, labs/<lab>/, tests/,
# tests/fuzz/, book/) and from the comment's own folder.
my @commented = grep { -f && !m{^build} } split /\n/, `git ls-files 2>/dev/null`;
@commented = (@runtime, @host_code, glob('tests/*.[cht] tests/*.mk tests/fuzz/*.[ch]')) unless @commented;
@commented = grep { /\.(?:[ch]|cu|cuh|cl|t|mk|sh|in)$|(?:^|\/)Makefile$/ } @commented;
my @roots = ('', 'src/', (map {"$_/"} grep { -d } glob('src/* src/*/* labs/*')), 'cl/', 'cuda/', 'labs/', 'tests/',
             'tests/fuzz/', 'book/');
my @dangling;
for my $path (@commented) {
    my @lines = read_lines($path);
    (my $own = $path) =~ s{[^/]*$}{};
    my $c_like = $path =~ /\.(?:[ch]|cu|cuh|cl)$/;
    for my $i (0 .. $#lines) {
        # Only the comment: in C, a line inside /* */ or after // or /*; elsewhere, after #.
        my ($comment) = $c_like ? $lines[$i] =~ m{(?://|/\*|^\s*\*)(.*)} : $lines[$i] =~ /#(.*)/;
        next unless defined $comment;
        my $file = qr{(?:[\w.-]+/)*[\w-]+\.(?:c|h|cu|cuh|cl|t|mk|sh|md)\b};
        my @named = ($comment =~ /\bsee\s+($file)/gi, $comment =~ m{(?<![\w./-])((?:src|cl|cuda|labs|tests|book)/$file)}g);
        for my $named (@named) {
            next if grep { -e "$_$named" } (@roots, $own);
            push @dangling, "$path:" . ($i + 1) . ": see $named";
        }
    }
}
ok(!@dangling, 'every file a comment names with "see FILE" or a path is in the tree', @dangling);

print "1..$tests\n";
exit($failed ? 1 : 0);
