package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.StringStringEntryProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The command line's bad-input catalogue (issue 13): one row per case, the command line and the parts its one error line
 * must hold. Every row must exit with code 2, print nothing on standard output and exactly one line on standard error,
 * {@code kiln COMMAND: ...}, naming what was expected and what was given, with no stack trace and no Java class name.
 * The commands run in process through {@link Main#run(PrintWriter, PrintWriter, String...)}, as the other CLI tests do.
 *
 * <p>In a row, {@code @NAME} is the path of fixture NAME in this class's temporary folder (made once, in
 * {@link #fixtures()}), and {@code ''} is an empty argument.
 */
@ExtendWith(FixedMachinePeak.class)
class CliBadInputCatalogueTest {
    @TempDir
    static Path tmp;

    /** One row: what is wrong, the command line, the parts of the error line. */
    private static Arguments bad(String what, String commandLine, String... parts) {
        return Arguments.of(what, commandLine, parts);
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                // ---- the top level
                bad("an unknown command", "nope", "kiln: Unmatched argument at index 0: 'nope'"),
                bad("an unknown top-level option", "--nope", "kiln: Unknown option: '--nope'"),
                bad("help for an unknown command", "help nope", "Unknown subcommand 'nope'"),

                // ---- run: the MODEL argument
                bad("run without MODEL", "run", "kiln run: Missing required parameter: 'MODEL'"),
                bad("an unknown built-in model", "run resnet --random-inputs", "MODEL: expected a built-in model [mlp, transformer]", "got 'resnet' (no such file)"),
                bad("a model name in the wrong case", "run MLP --random-inputs", "got 'MLP' (no such file)"),
                bad("a directory as MODEL", "run @dir --random-inputs", "MODEL: expected", "(a directory)"),
                bad("a missing .onnx file", "run @missing.onnx --random-inputs", "got '@missing.onnx' (no such file)"),
                bad("an empty .onnx file", "run @empty.onnx --random-inputs", "@empty.onnx: the model has no graph"),
                bad("a garbage .onnx file", "run @garbage.onnx --random-inputs", "@garbage.onnx: not a valid ONNX ModelProto"),
                bad("a truncated .onnx file", "run @truncated.onnx --random-inputs", "@truncated.onnx: not a valid ONNX ModelProto", "truncated"),
                bad("a .npy file as MODEL", "run @x.npy --random-inputs", "@x.npy: not a valid ONNX ModelProto"),
                bad("a text file as MODEL", "run @notes.txt --random-inputs", "@notes.txt: not a valid ONNX ModelProto"),
                bad("a second positional argument", "run mlp extra --random-inputs", "kiln run: Unmatched argument at index 2: 'extra'"),

                // ---- run: --device
                bad("an unknown device", "run mlp --random-inputs --device NOPE", "kiln run: unknown device 'NOPE'; registered devices: ["),
                bad("a malformed device index", "run mlp --random-inputs --device cpu:x", "device 'cpu:x' is not of the form KIND or KIND:INDEX"),
                bad("a negative device index", "run mlp --random-inputs --device CPU:-1", "CPU:-1"),
                bad("a device index of ten digits", "run mlp --random-inputs --device CPU:1234567890", "device 'CPU:1234567890' is not of the form KIND or KIND:INDEX"),
                bad("an empty device name", "run mlp --random-inputs --device ''", "device ''"),
                bad("--device without its value", "run mlp --random-inputs --device", "Missing required parameter for option '--device'"),

                // ---- run: --input syntax and files
                bad("--input without its value", "run mlp --input", "Missing required parameter for option '--input'"),
                bad("--input without NAME=", "run mlp --input x.npy", "'--input'", "expected NAME=FILE.npy, got 'x.npy'"),
                bad("--input with an empty NAME", "run mlp --input =x.npy", "expected NAME=FILE.npy, got '=x.npy'"),
                bad("--input with an empty FILE", "run mlp --input x=", "expected NAME=FILE.npy, got 'x='"),
                bad("--input of a missing file", "run mlp --input x=@missing.npy", "input 'x': no such file @missing.npy"),
                bad("--input of a directory", "run mlp --input x=@dir", "input 'x': expected a .npy file, got the directory @dir"),
                bad("--input of an unknown name", "run mlp --input y=@x.npy", "--input y=@x.npy: the model has no input 'y'; its inputs are [x f32 [4, 16]]"),
                bad("--input given twice", "run mlp --input x=@x.npy --input x=@x.npy", "--input x: given twice"),
                bad("--input of f64 data for an f32 input", "run mlp --input x=@f64.npy", "input 'x': expected f32 [4, 16], @f64.npy holds f64 [4, 16]"),
                bad("--input of i32 data for an f32 input", "run mlp --input x=@i32.npy", "expected f32 [4, 16], @i32.npy holds i32 [4, 16]"),
                bad("--input of bool data for an f32 input", "run mlp --input x=@bool.npy", "expected f32 [4, 16], @bool.npy holds bool [4, 16]"),
                bad("--input of the wrong leading dim", "run mlp --input x=@f32-3x16.npy", "expected f32 [4, 16], @f32-3x16.npy holds f32 [3, 16]"),
                bad("--input of the wrong rank", "run mlp --input x=@f32-64.npy", "expected f32 [4, 16], @f32-64.npy holds f32 [64]"),
                bad("--input of a scalar", "run mlp --input x=@f32-scalar.npy", "expected f32 [4, 16], @f32-scalar.npy holds f32 []"),
                bad("--input of an empty array", "run mlp --input x=@f32-0x16.npy", "expected f32 [4, 16], @f32-0x16.npy holds f32 [0, 16]"),
                bad("--input of a transposed array", "run mlp --input x=@f32-16x4.npy", "expected f32 [4, 16], @f32-16x4.npy holds f32 [16, 4]"),
                bad("--input of an empty file", "run mlp --input x=@empty.npy", "@empty.npy: expected the .npy magic string"),
                bad("--input of a text file", "run mlp --input x=@notes.txt", "@notes.txt: expected the .npy magic string \\x93NUMPY at the start"),
                bad("--input of an .onnx file", "run mlp --input x=@sym.onnx", "@sym.onnx: expected the .npy magic string"),
                bad("--input of a truncated file", "run mlp --input x=@truncated.npy", "@truncated.npy: truncated data: expected 256 data bytes for f32 [4, 16], found 246"),
                bad("--input with trailing bytes", "run mlp --input x=@trailing.npy", "@trailing.npy: trailing bytes after the data"),
                bad("--input of only the magic string", "run mlp --input x=@magic-only.npy", "truncated header: expected a format version"),
                bad("--input of format version 9.0", "run mlp --input x=@version9.npy", "expected format version 1.0, 2.0 or 3.0, found 9.0"),
                bad("--input whose header length passes the end", "run mlp --input x=@header-past-end.npy", "truncated header: expected"),
                bad("--input whose header is no dict", "run mlp --input x=@header-list.npy", "@header-list.npy"),
                bad("--input whose header lacks descr", "run mlp --input x=@no-descr.npy", "expected the header keys descr, fortran_order and shape"),
                bad("--input of complex numbers", "run mlp --input x=@complex.npy", "unsupported dtype '<c8'"),
                bad("--input of Python objects", "run mlp --input x=@object.npy", "unsupported dtype '|O'"),
                bad("--input of a fortran_order that is no bool", "run mlp --input x=@fortran-maybe.npy", "malformed header: expected a Python literal", "'maybe, "),
                bad("--input of a negative dimension", "run mlp --input x=@negative-dim.npy", "expected dimensions between 0 and 2147483647, found shape"),
                bad("--input of a dimension past int", "run mlp --input x=@huge-dim.npy", "expected dimensions between 0 and 2147483647"),
                bad("--input of a shape that is no tuple", "run mlp --input x=@shape-string.npy", "expected shape to be a tuple of integers"),
                bad("--input of 10,000 nested parentheses", "run mlp --input x=@nested.npy", "malformed header: tuples and lists nested deeper than"),
                bad("--input of 2^40 elements claimed by 96 bytes", "run @sym.onnx --input x=@claims-2p40.npy", "@claims-2p40.npy"),

                // ---- run: inputs, seeds, outputs
                bad("missing inputs without --random-inputs", "run transformer", "missing model input [tokens f32 [1, 8, 32]]", "--random-inputs"),
                bad("missing inputs of a two-input model", "run @conv.onnx --input x=@conv-x.npy", "missing model input [W f32 [1, 1, 3, 3]]"),
                bad("a seed that is no number", "run mlp --random-inputs --seed abc", "'--seed'", "'abc' is not a long"),
                bad("a seed past long", "run mlp --random-inputs --seed 99999999999999999999", "'99999999999999999999' is not a long"),
                bad("--output-dir that is a file", "run mlp --random-inputs --output-dir @notes.txt", "@notes.txt"),
                bad("--output-dir under a file", "run mlp --random-inputs --output-dir @notes.txt/sub", "cannot write into @notes.txt/sub: @notes.txt is a file, not a directory"),
                bad("--random-inputs with a value", "run mlp --random-inputs=maybe", "'--random-inputs'", "maybe"),

                // ---- run: --dim
                bad("--dim for a built-in model", "run mlp --random-inputs --dim N=4", "--dim: only an .onnx model has symbolic dimensions, mlp has none"),
                bad("--dim of an unknown dimension", "run @sym.onnx --random-inputs --dim T=4", "no symbolic input dimension 'T'", "[N]"),
                bad("--dim of zero", "run @sym.onnx --random-inputs --dim N=0", "the maximum of dimension 'N' must be at least 1, got 0"),
                bad("--dim of a negative size", "run @sym.onnx --random-inputs --dim N=-1", "the maximum of dimension 'N' must be at least 1, got -1"),
                bad("--dim of no number", "run @sym.onnx --random-inputs --dim N=abc", "'--dim'", "expected NAME=MAX with MAX a whole number up to 2147483647, got 'N=abc'"),
                bad("--dim past int", "run @sym.onnx --random-inputs --dim N=99999999999", "expected NAME=MAX with MAX a whole number up to 2147483647, got 'N=99999999999'"),
                bad("--dim without =", "run @sym.onnx --random-inputs --dim N", "'--dim'", "expected NAME=MAX, got 'N'"),
                bad("--dim with an empty name", "run @sym.onnx --random-inputs --dim =4", "expected NAME=MAX, got '=4'"),
                bad("--dim given twice", "run @sym.onnx --random-inputs --dim N=4 --dim N=8", "--dim N: given twice (4 and 8)"),
                bad("--dim over the memory budget", "run @sym.onnx --random-inputs --dim N=2147483647", "execution plan on CPU", "over the memory budget of"),
                bad("an input larger than its --dim", "run @sym.onnx --input x=@sym-5x4.npy --dim N=4", "dimension 'N' is 5, the plan was prepared for 1 to 4"),
                bad("an input whose fixed dim differs", "run @sym.onnx --input x=@x.npy", "input 'x': expected f32 [?, 4], @x.npy holds f32 [4, 16]"),

                // ---- run: malformed models (the model's own errors, one line each)
                bad("an unsupported operator", "run @unsupported.onnx --random-inputs", "unsupported ONNX op NoSuchOp", "node 'n'"),
                bad("a node reading a later node's output (a cycle)", "run @cycle.onnx --random-inputs", "node 'a' (Relu)", "reads 'b'"),
                bad("a value defined twice", "run @twice.onnx --random-inputs", "node 'second' (Neg)", "defined once"),
                bad("a node without its required input", "run @reshape-no-shape.onnx --random-inputs", "node 'r' (Reshape)", "input 1 is required"),
                bad("an input without a shape, generated", "run @no-shape.onnx --random-inputs", "input 'x': the model declares no shape, so it cannot be generated"),
                bad("an input of a dim past int", "run @input-2p40.onnx --random-inputs", "value 'x' has dimension 0 of size 1099511627776: expected a size from 0 to 2147483647 or a symbolic name"),
                bad("an input of a negative dim", "run @input-negative.onnx --random-inputs", "value 'x' has dimension 0 of size -5: expected a size from 0"),
                bad("an input of string dtype", "run @string-input.onnx --random-inputs",
                        "@string-input.onnx: 'x' is x: string[2]; the command line reads and writes tensors only"),
                bad("an initializer claiming 2^28 floats in 30 bytes", "run @claims-2p28.onnx --random-inputs", "initializer", "w"),
                bad("a constant Gather index out of range", "run @gather-oob.onnx --random-inputs", "Gather", "5"),
                bad("an attribute of the wrong type", "run @axis-float.onnx --random-inputs", "node 's' (Softmax)", "axis"),
                bad("external data that is missing", "run @external-missing.onnx --random-inputs", "@external-missing.onnx", "nowhere.bin"),
                bad("an opset from the future", "run @opset-99.onnx --random-inputs", "opset", "99"),

                // ---- profile
                bad("profile without MODEL", "profile", "kiln profile: Missing required parameter: 'MODEL'"),
                bad("profile of an unknown model", "profile nope --random-inputs", "kiln profile: MODEL: expected a built-in model"),
                bad("profile --runs 0", "profile mlp --random-inputs --runs 0", "--runs: expected at least 1 run, got 0"),
                bad("profile --runs -1", "profile mlp --random-inputs --runs -1", "--runs: expected at least 1 run, got -1"),
                bad("profile --runs of no number", "profile mlp --random-inputs --runs x", "'--runs'", "'x' is not an int"),
                bad("profile --runs past int", "profile mlp --random-inputs --runs 2147483648", "'2147483648' is not an int"),
                bad("profile --warmup -1", "profile mlp --random-inputs --warmup -1", "--warmup: expected 0 or more runs, got -1"),
                bad("profile --warmup of no number", "profile mlp --random-inputs --warmup abc", "'--warmup'", "'abc' is not an int"),
                bad("profile --trace that is a directory", "profile mlp --random-inputs --runs 1 --warmup 0 --trace @dir", "output @dir is a directory"),
                bad("profile --trace under a file", "profile mlp --random-inputs --runs 1 --warmup 0 --trace @notes.txt/t.json", "@notes.txt is a file, not a directory"),
                bad("profile --trace without its value", "profile mlp --random-inputs --trace", "Missing required parameter for option '--trace'"),
                bad("profile --opts with a value", "profile mlp --random-inputs --opts=yes", "'--opts'", "yes"),
                bad("profile --output-dir that is a file", "profile mlp --random-inputs --runs 1 --warmup 0 --output-dir @notes.txt", "@notes.txt"),
                bad("profile of f64 data for an f32 input", "profile mlp --input x=@f64.npy", "input 'x': expected f32 [4, 16], @f64.npy holds f64 [4, 16]"),
                bad("profile on an unknown device", "profile mlp --random-inputs --device NOPE", "kiln profile: unknown device 'NOPE'"),
                bad("profile without inputs", "profile mlp", "missing model input [x f32 [4, 16]]"),
                bad("profile of a garbage model", "profile @garbage.onnx --random-inputs", "not a valid ONNX ModelProto"),
                bad("profile with --dim for a built-in model", "profile mlp --random-inputs --dim N=4", "--dim: only an .onnx model"),

                // ---- bench
                bad("bench without MODEL", "bench", "kiln bench: Missing required parameter: 'MODEL'"),
                bad("bench --runs 0", "bench mlp --random-inputs --runs 0", "--runs: expected at least 1 run, got 0"),
                bad("bench --runs -3", "bench mlp --random-inputs --runs -3", "--runs: expected at least 1 run, got -3"),
                bad("bench --runs past int", "bench mlp --random-inputs --runs 999999999999", "'999999999999' is not an int"),
                bad("bench --warmup -2", "bench mlp --random-inputs --warmup -2", "--warmup: expected 0 or more runs, got -2"),
                bad("bench --warmup of no number", "bench mlp --random-inputs --warmup x", "'x' is not an int"),
                bad("bench --trace (profile's option)", "bench mlp --random-inputs --trace t.json", "kiln bench: Unknown options: '--trace', 't.json'"),
                bad("bench --output-dir (run's option)", "bench mlp --random-inputs --output-dir o", "kiln bench: Unknown options: '--output-dir', 'o'"),
                bad("bench of a truncated input", "bench mlp --input x=@truncated.npy", "truncated data"),
                bad("bench on a device without a kind", "bench mlp --random-inputs --device :1", "device ':1' is not of the form KIND or KIND:INDEX"),
                bad("bench of a directory", "bench @dir --random-inputs", "(a directory)"),
                bad("bench of an empty model", "bench @empty.onnx --random-inputs", "the model has no graph"),
                bad("bench of an input larger than its --dim", "bench @sym.onnx --input x=@sym-5x4.npy --dim N=2", "dimension 'N' is 5, the plan was prepared for 1 to 2"),

                // ---- generate (the model files and the context are GenerateCommandTest's, on kiln-llm's test models)
                bad("generate without MODEL", "generate --prompt hi", "kiln generate: Missing required parameter: 'MODEL'"),
                bad("generate without --prompt", "generate @missing.gguf", "kiln generate: Missing required option: '--prompt=TEXT'"),
                bad("generate of a missing model", "generate @missing.gguf --prompt hi", "kiln generate: @missing.gguf: expected a .gguf file or a folder"),
                bad("generate of a text file", "generate @notes.txt --prompt hi", "kiln generate: @notes.txt"),
                bad("generate of a folder without config.json", "generate @dir --prompt hi", "kiln generate: @dir: expected a .gguf file or a Hugging Face model folder",
                        "found a folder without config.json"),
                bad("generate with an empty prompt", "generate @dir --prompt ''", "--prompt: expected some text, got an empty string"),
                bad("generate --temperature -1", "generate @dir --prompt hi --temperature -1", "--temperature: expected a number >= 0 (0 = greedy), got -1.0"),
                bad("generate --top-p 0", "generate @dir --prompt hi --top-p 0", "--top-p: expected a number in (0, 1], got 0.0"),
                bad("generate --min-p 1.5", "generate @dir --prompt hi --min-p 1.5", "--min-p: expected a number in [0, 1], got 1.5"),
                bad("generate --top-k -1", "generate @dir --prompt hi --top-k -1", "--top-k: expected a whole number >= 0 (0 = off), got -1"),
                bad("generate --max-tokens -1", "generate @dir --prompt hi --max-tokens -1", "--max-tokens: expected a whole number >= 0"),
                bad("generate --max-tokens of no number", "generate @dir --prompt hi --max-tokens lots", "'lots' is not an int"),
                bad("generate --repetition-penalty 0", "generate @dir --prompt hi --repetition-penalty 0", "--repetition-penalty: expected a number > 0"),
                bad("generate --context -1", "generate @dir --prompt hi --context -1", "--context: expected a whole number >= 0"),
                bad("generate --stop ''", "generate @dir --prompt hi --stop ''", "--stop: expected some text, got an empty string"),
                bad("generate on an unknown device", "generate @dir --prompt hi --device NOPE", "kiln generate: unknown device 'NOPE'"),

                // ---- chat (templates and conversations are ChatCommandTest's, on kiln-llm's test models)
                bad("chat without MODEL", "chat", "kiln chat: Missing required parameter: 'MODEL'"),
                bad("chat of a missing model", "chat @missing.gguf", "kiln chat: @missing.gguf: expected a .gguf file or a folder"),
                bad("chat of a folder without config.json", "chat @dir", "kiln chat: @dir: expected a .gguf file or a Hugging Face model folder",
                        "found a folder without config.json"),
                bad("chat with an empty --system", "chat @dir --system ''", "--system: expected some text, got an empty string"),
                bad("chat --temperature -1", "chat @dir --temperature -1", "--temperature: expected a number >= 0 (0 = greedy), got -1.0"),
                bad("chat --top-p 0", "chat @dir --top-p 0", "--top-p: expected a number in (0, 1], got 0.0"),
                bad("chat --max-tokens -1", "chat @dir --max-tokens -1", "--max-tokens: expected a whole number >= 0"),
                bad("chat --stop ''", "chat @dir --stop ''", "--stop: expected some text, got an empty string"),
                bad("chat --ignore-eos (generate's option)", "chat @dir --ignore-eos", "kiln chat: Unknown option: '--ignore-eos'"),
                bad("chat on an unknown device", "chat @dir --device NOPE", "kiln chat: unknown device 'NOPE'"),

                // ---- serve (the server itself is ServeCommandTest's and kiln-llm's ServerTest's)
                bad("serve without MODEL", "serve", "kiln serve: Missing required parameter: 'MODEL'"),
                bad("serve of a missing model", "serve @missing.gguf", "kiln serve: @missing.gguf: expected a .gguf file or a folder"),
                bad("serve of a folder without config.json", "serve @dir", "kiln serve: @dir: expected a .gguf file or a Hugging Face model folder"),
                bad("serve --port 70000", "serve @dir --port 70000", "--port: expected a port number from 0 (any free port) to 65535, got 70000"),
                bad("serve --port -1", "serve @dir --port -1", "--port: expected a port number from 0 (any free port) to 65535, got -1"),
                bad("serve --parallel 0", "serve @dir --parallel 0", "--parallel: expected a number of slots from 1 to 256, got 0"),
                bad("serve --queue -1", "serve @dir --queue -1", "--queue: expected a whole number >= 0, got -1"),
                bad("serve --max-body 10", "serve @dir --max-body 10", "--max-body: expected a number of bytes >= 1024, got 10"),
                bad("serve --api-key ''", "serve @dir --api-key ''", "--api-key: expected a key, got an empty string"),
                bad("serve --host ''", "serve @dir --host ''", "--host: expected an address such as 127.0.0.1, got an empty string"),
                bad("serve --name ''", "serve @dir --name ''", "--name: expected a name, got an empty string"),
                bad("serve --temperature -1", "serve @dir --temperature -1", "--temperature: expected a number >= 0 (0 = greedy), got -1.0"),
                bad("serve --port of no number", "serve @dir --port http", "'http' is not an int"),
                bad("serve on an unknown device", "serve @dir --device NOPE", "kiln serve: unknown device 'NOPE'"),

                // ---- onnx-test
                bad("onnx-test without DIR", "onnx-test", "kiln onnx-test: Missing required parameter: 'DIR'"),
                bad("onnx-test of a missing folder", "onnx-test @missing", "DIR: expected a folder of ONNX test cases, got '@missing' (no such folder)"),
                bad("onnx-test of a file", "onnx-test @notes.txt", "got '@notes.txt' (not a folder)"),
                bad("onnx-test of a folder without cases", "onnx-test @dir", "no ONNX test case (a folder holding model.onnx) under '@dir'"),
                bad("onnx-test on an unknown device", "onnx-test --device NOPE @case", "unknown device 'NOPE'"),
                bad("onnx-test --markdown that is a directory", "onnx-test --markdown @dir @case", "output @dir is a directory"),
                bad("onnx-test --markdown under a file", "onnx-test --markdown @notes.txt/c.md @case", "@notes.txt is a file, not a directory"),
                bad("onnx-test --runs (bench's option)", "onnx-test --runs 3 @case", "kiln onnx-test: Unknown option: '--runs'"),
                bad("onnx-test of a missing folder among good ones", "onnx-test @case @missing", "got '@missing' (no such folder)"),

                // ---- devices, demo
                bad("devices with an argument", "devices extra", "kiln devices: Unmatched argument at index 1: 'extra'"),
                bad("devices --device", "devices --device CPU", "kiln devices: Unknown options: '--device', 'CPU'"),
                bad("demo --seq 0", "demo --seq 0", "--seq: expected a sequence length from 1 to 4096, got 0"),
                bad("demo --seq -3", "demo --seq -3", "--seq: expected a sequence length from 1 to 4096, got -3"),
                bad("demo --seq past the demo's range", "demo --seq 100000000", "--seq: expected a sequence length from 1 to 4096, got 100000000"),
                bad("demo --seq of no number", "demo --seq x", "'--seq'", "'x' is not an int"),
                bad("demo with an argument", "demo extra", "kiln demo: Unmatched argument at index 1: 'extra'"),
                bad("demo with an unknown option", "demo --no-such-option", "kiln demo: Unknown option: '--no-such-option'"));
    }

    @ParameterizedTest(name = "{0}: kiln {1}")
    @MethodSource("cases")
    void exitsWithOneLineAndCode2(String what, String commandLine, String[] parts) {
        String[] args = Arrays.stream(commandLine.split(" ")).map(CliBadInputCatalogueTest::resolve).toArray(String[]::new);
        StringWriter out = new StringWriter(), err = new StringWriter();
        int code = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
        String e = err.toString();
        assertThat(code).as("exit code of kiln %s; stderr: %s", commandLine, e).isEqualTo(2);
        assertThat(out.toString()).as("stdout").isEmpty();
        assertThat(e.lines().toList()).as("stderr, one line").hasSize(1);
        assertThat(e).as("no stack trace").doesNotContain("\tat ").doesNotContainPattern("\\b(java|javax|jdk|sun)\\.[a-z]+\\.")
                .doesNotContainPattern("\\b\\w+(Exception|Error):");
        assertThat(e).startsWith("kiln");
        for (String p : parts) assertThat(e).contains(resolve(p));
    }

    @Test
    void theCatalogueIsLargeAndEveryCaseIsDistinct() {
        List<Arguments> all = cases().toList();
        assertThat(all).hasSizeGreaterThanOrEqualTo(120);
        assertThat(all.stream().map(a -> (String) a.get()[1]).distinct().count()).isEqualTo(all.size());
        assertThat(all.stream().map(a -> (String) a.get()[0]).distinct().count()).isEqualTo(all.size());
    }

    /** {@code @NAME} → the fixture's path (inside a larger argument too), {@code ''} → the empty string. */
    private static String resolve(String arg) {
        if (arg.equals("''")) return "";
        return arg.replaceAll("@([\\w.-]+)", java.util.regex.Matcher.quoteReplacement(tmp.toString()) + "/$1");
    }

    // ------------------------------------------------------------------------------------ fixtures

    @BeforeAll
    static void fixtures() throws IOException {
        Files.createDirectories(tmp.resolve("dir"));
        Files.writeString(tmp.resolve("notes.txt"), "not a tensor, not a model\n");
        Npy.write(tmp.resolve("x.npy"), Tensor.randn(1, 4, 16));
        Npy.write(tmp.resolve("f64.npy"), Tensor.randn(1, 4, 16).cast(DType.F64));
        Npy.write(tmp.resolve("i32.npy"), Tensor.zeros(DType.I32, 4, 16));
        Npy.write(tmp.resolve("bool.npy"), Tensor.zeros(DType.BOOL, 4, 16));
        Npy.write(tmp.resolve("f32-3x16.npy"), Tensor.zeros(3, 16));
        Npy.write(tmp.resolve("f32-64.npy"), Tensor.zeros(64));
        Npy.write(tmp.resolve("f32-scalar.npy"), Tensor.zeros());
        Npy.write(tmp.resolve("f32-0x16.npy"), Tensor.zeros(0, 16));
        Npy.write(tmp.resolve("f32-16x4.npy"), Tensor.zeros(16, 4));
        Npy.write(tmp.resolve("sym-5x4.npy"), Tensor.randn(2, 5, 4));
        Files.write(tmp.resolve("empty.npy"), new byte[0]);
        byte[] good = Files.readAllBytes(tmp.resolve("x.npy"));
        Files.write(tmp.resolve("truncated.npy"), Arrays.copyOf(good, good.length - 10));
        Files.write(tmp.resolve("trailing.npy"), Arrays.copyOf(good, good.length + 7));
        Files.write(tmp.resolve("magic-only.npy"), Arrays.copyOf(good, 6));
        byte[] v9 = good.clone();
        v9[6] = 9;
        Files.write(tmp.resolve("version9.npy"), v9);
        byte[] pastEnd = Arrays.copyOf(good, 10);
        pastEnd[8] = (byte) 0xff;
        pastEnd[9] = (byte) 0x7f;
        Files.write(tmp.resolve("header-past-end.npy"), pastEnd);
        npyWithHeader("header-list.npy", "['<f4', False, (4, 16)]", 0);
        npyWithHeader("no-descr.npy", "{'fortran_order': False, 'shape': (4, 16), }", 0);
        npyWithHeader("complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (4, 16), }", 512);
        npyWithHeader("object.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (4, 16), }", 512);
        npyWithHeader("fortran-maybe.npy", "{'descr': '<f4', 'fortran_order': maybe, 'shape': (4, 16), }", 256);
        npyWithHeader("negative-dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-4, 16), }", 256);
        npyWithHeader("huge-dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 16), }", 256);
        npyWithHeader("shape-string.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': 'big', }", 256);
        npyWithHeader("nested.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(10_000) + ")".repeat(10_000) + ", }", 0);
        npyWithHeader("claims-2p40.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (274877906944, 4), }", 16);

        GraphProto.Builder sym = graph(List.of(value("x", 1, "N", 4L)), List.of(value("y", 1, "N", 3L)),
                node("MatMul", "mm", List.of("x", "W"), List.of("m")), node("Relu", "relu", List.of("m"), List.of("y")));
        sym.addInitializer(floats("W", new long[] {4, 3}, 12));
        Path symFile = model("sym.onnx", 13, sym);
        byte[] symBytes = Files.readAllBytes(symFile);
        Files.write(tmp.resolve("empty.onnx"), new byte[0]);
        Files.writeString(tmp.resolve("garbage.onnx"), "garbage!");
        Files.write(tmp.resolve("truncated.onnx"), Arrays.copyOf(symBytes, symBytes.length / 2));

        model("conv.onnx", 13, graph(List.of(value("x", 1, 1L, 1L, 7L, 5L), value("W", 1, 1L, 1L, 3L, 3L)), List.of(value("y", 1)),
                node("Conv", "conv", List.of("x", "W"), List.of("y"))));
        Npy.write(tmp.resolve("conv-x.npy"), Tensor.zeros(1, 1, 7, 5));
        model("unsupported.onnx", 13, graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)), node("NoSuchOp", "n", List.of("x"), List.of("y"))));
        model("cycle.onnx", 13, graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)),
                node("Relu", "a", List.of("b"), List.of("y")), node("Neg", "b", List.of("y"), List.of("b"))));
        model("twice.onnx", 13, graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)),
                node("Relu", "first", List.of("x"), List.of("y")), node("Neg", "second", List.of("x"), List.of("y"))));
        model("reshape-no-shape.onnx", 13, graph(List.of(value("x", 1, 2L, 3L)), List.of(value("y", 1)),
                node("Reshape", "r", List.of("x"), List.of("y"))));
        model("no-shape.onnx", 13, graph(List.of(ValueInfoProto.newBuilder().setName("x")
                        .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(1))).build()),
                List.of(value("y", 1)), node("Relu", "r", List.of("x"), List.of("y"))));
        model("input-2p40.onnx", 13, graph(List.of(value("x", 1, 1L << 40)), List.of(value("y", 1)), node("Relu", "r", List.of("x"), List.of("y"))));
        model("input-negative.onnx", 13, graph(List.of(value("x", 1, -5L)), List.of(value("y", 1)), node("Relu", "r", List.of("x"), List.of("y"))));
        model("string-input.onnx", 13, graph(List.of(value("x", 8, 2L)), List.of(value("y", 8)), node("Identity", "i", List.of("x"), List.of("y"))));
        GraphProto.Builder bomb = graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)), node("Add", "a", List.of("x", "w"), List.of("y")));
        bomb.addInitializer(TensorProto.newBuilder().setName("w").setDataType(1).addDims(1L << 28).addFloatData(1f));
        model("claims-2p28.onnx", 13, bomb);
        GraphProto.Builder gather = graph(List.of(value("x", 1, 3L)), List.of(value("y", 1)), node("Gather", "g", List.of("x", "i"), List.of("y")));
        gather.addInitializer(TensorProto.newBuilder().setName("i").setDataType(7).addDims(1).addInt64Data(5));
        model("gather-oob.onnx", 13, gather);
        model("axis-float.onnx", 13, graph(List.of(value("x", 1, 2L, 3L)), List.of(value("y", 1)),
                node("Softmax", "s", List.of("x"), List.of("y"), AttributeProto.newBuilder().setName("axis")
                        .setType(AttributeProto.AttributeType.FLOAT).setF(1.5f).build())));
        GraphProto.Builder external = graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)), node("Add", "a", List.of("x", "w"), List.of("y")));
        external.addInitializer(TensorProto.newBuilder().setName("w").setDataType(1).addDims(2).setDataLocation(TensorProto.DataLocation.EXTERNAL)
                .addExternalData(StringStringEntryProto.newBuilder().setKey("location").setValue("nowhere.bin")));
        model("external-missing.onnx", 13, external);
        model("opset-99.onnx", 99, graph(List.of(value("x", 1, 2L)), List.of(value("y", 1)), node("Relu", "r", List.of("x"), List.of("y"))));

        Path c = Files.createDirectories(tmp.resolve("case"));
        Files.copy(tmp.resolve("unsupported.onnx"), c.resolve("model.onnx"));
    }

    /** A .npy file of format 1.0 with {@code header} (padded as NumPy does) and {@code dataBytes} zero bytes of data. */
    private static void npyWithHeader(String name, String header, int dataBytes) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.ISO_8859_1);
        int total = 10 + h.length + 1;
        int pad = (64 - total % 64) % 64;
        byte[] out = new byte[total + pad + dataBytes];
        byte[] magic = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
        System.arraycopy(magic, 0, out, 0, 8);
        int len = h.length + pad + 1;
        if (len > 0xffff) { // a header this long needs version 2.0 and a four-byte length
            out = new byte[12 + h.length + 1 + dataBytes];
            System.arraycopy(magic, 0, out, 0, 8);
            out[6] = 2;
            len = h.length + 1;
            out[8] = (byte) len;
            out[9] = (byte) (len >> 8);
            out[10] = (byte) (len >> 16);
            out[11] = (byte) (len >> 24);
            System.arraycopy(h, 0, out, 12, h.length);
            out[12 + h.length] = '\n';
            Files.write(tmp.resolve(name), out);
            return;
        }
        out[8] = (byte) len;
        out[9] = (byte) (len >> 8);
        System.arraycopy(h, 0, out, 10, h.length);
        Arrays.fill(out, 10 + h.length, 10 + h.length + pad, (byte) ' ');
        out[total + pad - 1] = '\n';
        Files.write(tmp.resolve(name), out);
    }

    private static ValueInfoProto value(String name, int elemType, Object... dims) {
        TypeProto.Tensor.Builder t = TypeProto.Tensor.newBuilder().setElemType(elemType);
        if (dims.length > 0) {
            TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
            for (Object d : dims) {
                if (d instanceof String p) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimParam(p));
                else s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue((Long) d));
            }
            t.setShape(s);
        }
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(t)).build();
    }

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    private static TensorProto floats(String name, long[] dims, int count) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(1);
        for (long d : dims) t.addDims(d);
        for (int i = 0; i < count; i++) t.addFloatData((float) Math.cos(i));
        return t.build();
    }

    private static GraphProto.Builder graph(List<ValueInfoProto> inputs, List<ValueInfoProto> outputs, NodeProto... nodes) {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addAllInput(inputs).addAllOutput(outputs);
        for (NodeProto n : nodes) g.addNode(n);
        return g;
    }

    private static Path model(String name, int opset, GraphProto.Builder g) throws IOException {
        ModelProto m = ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(opset)).setGraph(g).build();
        Path f = tmp.resolve(name);
        Files.write(f, m.toByteArray());
        return f;
    }
}
