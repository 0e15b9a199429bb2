#!/usr/bin/perl
# house_rules.t: the layout rules of DESIGN.md, checked on the tree (TAP, run
# by prove beside the C tests). Files stay under 500 lines and functions under
# 80; src/ names neither cl/ nor cuda/, and only src/host/ includes the host
# kernel list; no two object files call each other (read from the symbols nm
# lists in the built library, so the rule holds for what is really linked).
use strict;
use warnings;

my $max_file_lines = 500;
my $max_function_lines = 80;
my $library = $ENV{FLOWLAB_LIB} // 'build/libflowlab.a';
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
my @runtime = grep { -f } (glob('src/*.[ch] src/*/*.[ch] cl/*.[ch] cl/*.cl cuda/*.[ch] cuda/*.cu cuda/*.cuh'));
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

# ---- call loops between object files, from the library's symbol tables ----
if (!-f $library) {
    print "ok " . ++$tests . " # SKIP $library is not built (make lib)\n";
} else {
    my (%defines, %uses, $object);
    for (`nm $library 2>/dev/null`) {
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
            push @{ $calls{$from}{$to} }, $symbol if $to && $to ne $from;
        }
    }
    my @loops;
    for my $a (sort keys %calls) {
        for my $b (sort keys %{ $calls{$a} }) {
            next unless $a lt $b && $calls{$b}{$a};
            push @loops, "$a uses $calls{$a}{$b}[0], $b uses $calls{$b}{$a}[0]";
        }
    }
    ok(!@loops, 'no two object files of the library call each other', @loops);
}

print "1..$tests\n";
exit($failed ? 1 : 0);
