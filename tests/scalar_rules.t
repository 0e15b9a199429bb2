#!/usr/bin/perl
# scalar_rules.t: each element-wise rule (Cast to int32, the activations and
# their gradients, DivGradB, the optimizers' updates, int32 arithmetic that
# wraps) is written once, in
# src/scalar_rules.h, and the host, OpenCL and CUDA kernels all use it. TAP,
# run by prove from the repository's root.
use strict;
use warnings;

my $header = 'src/scalar_rules.h';
my @rules = qw(float_to_int32 relu relu_grad sigmoid sigmoid_grad tanh tanh_grad softplus softplus_grad div_grad_b
               gradient_descent momentum_accum momentum_var adam_lr adam_m adam_v adam_var
               int32_add int32_sub int32_mul int32_neg int32_div_fails);
# The kernels of each dialect, where a rule would be written again.
my %dialect = (
    host   => [glob('src/host/*.c src/host/*.h')],
    opencl => [glob('cl/*.cl')],
    cuda   => [glob('cuda/*.cu cuda/*.cuh cuda/*.h')],
);
# A second spelling of a rule, as each dialect had its own before.
my %spelling = (
    'the cast\'s saturation bounds (2147483648.0f)' => qr/2147483648\.0f/,
    'a float_to_int32 of its own'                   => qr/(?<!fl_rule_)\bfloat_to_int32\s*\(/,
    'a scalar Relu (v > 0 ? v : 0)'                 => qr/>\s*0\.0f\s*\?[^:;]+:\s*0\.0f/,
    'a scalar Relu mask (!(v > 0) ? 0 : v)'         => qr/!\(\s*[^()]*>\s*0\.0f\s*\)\s*\?\s*0\.0f/,
    'the sigmoid (1 / (1 + exp(-x)))'               => qr/1\.0f\s*\/\s*\(\s*1\.0f\s*\+\s*expf?\s*\(\s*-/,
    'a gradient y (1 - y) or (1 - y y)'             => qr/(\w+)\s*\*\s*\(\s*1\.0f\s*-\s*\1\s*\)|\(\s*1\.0f\s*-\s*(\w+)\s*\*\s*\2\s*\)/,
    'a tanh call'                                   => qr/(?<![\w.])tanhf?\s*\(/,
    'DivGradB\'s b^2 (/ (b * b))'                   => qr/\/\s*\(\s*(\w+)\s*\*\s*\1\s*\)/,
    'an Adam moment ((1 - beta) * g)'               => qr/\(\s*1\.0f\s*-\s*\w+\s*\)\s*\*/,
    'a sqrt call (Adam\'s)'                         => qr/(?<![\w.])sqrtf?\s*\(/,
    'an update in place (var -= lr * g)'            => qr/-=\s*[\w\[\]>-]+\s*\*/,
    'int32 arithmetic that wraps (through uint)'    => qr/\(\s*uint(?:32_t)?\s*\)\s*[\w\[\]]+\s*[-+*]\s*\(\s*uint|0u\s*-/,
    'Div\'s faults (INT32_MIN / -1)'                => qr/INT(?:32)?_MIN\s*&&\s*\w+\s*==\s*-1/,
);

my $tests = 0;
sub ok {
    my ($pass, $what, @diag) = @_;
    $tests++;
    print(($pass ? 'ok' : 'not ok') . " $tests - $what\n");
    print "# $_\n" for @diag;
    return $pass;
}

sub read_text {
    my ($path) = @_;
    open(my $fh, '<', $path) or die "scalar_rules.t: cannot read $path: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text;
}

# The text without its comments, so a comment may name a rule's formula;
# a comment's lines stay as empty lines, so that line numbers hold.
sub code_of {
    my ($text) = @_;
    $text =~ s{/\*(.*?)\*/}{"\n" x ($1 =~ tr/\n//)}gse;
    $text =~ s{//[^\n]*}{}g;
    return $text;
}

my $rules_text = read_text($header);
for my $rule (@rules) {
    ok($rules_text =~ /^FL_RULE\s+\w+\s+fl_rule_$rule\s*\(/m, "$header defines fl_rule_$rule");
}

# Defined nowhere else in src/, cl/ or cuda/.
my @elsewhere;
for my $path (grep { $_ ne $header } glob('src/*.[ch] src/*/*.[ch] src/*/*/*.[ch] cl/*.[ch] cl/*.cl cuda/*.[ch] cuda/*.cu cuda/*.cuh')) {
    my $code = code_of(read_text($path));
    push @elsewhere, "$path defines $1" while $code =~ /\b(fl_rule_\w+)\s*\([^;{)]*\)\s*\{/g;
}
ok(!@elsewhere, "no rule is defined outside $header", @elsewhere,
   @elsewhere ? ('a rule belongs in the shared header, which all three dialects include') : ());

# Every rule is used by every dialect (called, or passed to a loop).
for my $name (sort keys %dialect) {
    my $code = join("\n", map { code_of(read_text($_)) } @{ $dialect{$name} });
    my @unused = grep { $code !~ /\bfl_rule_$_\b/ } @rules;
    ok(!@unused, "the $name kernels use every rule", map { "fl_rule_$_ is not used in the $name kernels" } @unused);
}

# No dialect spells a rule again (the float8 spellings of Relu in cl/ are
# select() calls, which these patterns leave alone).
my @again;
for my $name (sort keys %dialect) {
    for my $path (@{ $dialect{$name} }) {
        my @lines = split /\n/, code_of(read_text($path));
        for my $i (0 .. $#lines) {
            for my $what (sort keys %spelling) {
                push @again, "$path:" . ($i + 1) . ": $what: $lines[$i]" if $lines[$i] =~ $spelling{$what};
            }
        }
    }
}
ok(!@again, 'no kernel writes a rule of its own', @again,
   @again ? ("call the fl_rule_* function of $header instead") : ());

# The OpenCL program is built from embedded text: the header must be in it,
# ahead of the kernels, whatever directory a program runs from.
ok(read_text('cl/backend.mk') =~ /^CL_KERNELS\s*:=.*\Q$header\E/m, "cl/backend.mk embeds $header with the kernels");
ok(read_text('cl/opencl_device.c') =~ /source_named\("scalar_rules\.h"\)/, 'cl/opencl_device.c joins scalar_rules.h into the program');

# The header's OpenCL branch, compiled as OpenCL C on its own, where clang is.
if (system('command -v clang >/dev/null 2>&1') != 0) {
    print "ok " . ++$tests . " # SKIP clang is not installed (the OpenCL tests build it under PoCL)\n";
} else {
    # Each rule called once, with as many arguments as its parameter list names.
    my @calls;
    for my $rule (@rules) {
        my ($parameters) = $rules_text =~ /\bfl_rule_$rule\s*\(([^)]*)\)/;
        my $count = () = ($parameters // '') =~ /,/g;
        push @calls, "fl_rule_$rule(" . join(', ', map { "x[$_]" } 0 .. $count) . ')';
    }
    my $calls = join(' + ', @calls);
    my $kernel = "__kernel void k(__global const float *x, __global float *o) { o[0] = $calls; }";
    my $out = `(cat $header; echo '$kernel') | clang -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only -Werror - 2>&1`;
    ok($? == 0, "$header compiles as OpenCL C 1.2", split(/\n/, $out));
}

print "1..$tests\n";
