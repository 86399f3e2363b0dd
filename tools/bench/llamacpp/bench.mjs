// llama.cpp as the peer of Kiln's LLM benchmarks (issue 14), through node-llama-cpp 3.21.1's prebuilt CPU build.
//
//   cd tools/bench/llamacpp && npm install && node bench.mjs MODEL.gguf [--prompt N] [--gen N] [--threads T] [--runs R]
//
// Prefill: N prompt tokens (ids 300, 301, ...) evaluated in one batch, timed to the first generated token. Decode: the
// next --gen tokens, greedy (temperature 0), timed per token. Prints the median of R runs (a fresh context sequence each
// run) and the greedy token ids, which Kiln's greedy continuation of the same ids must equal.
import {getLlama} from "node-llama-cpp";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : dflt;
};
const modelPath = args[0];
const promptTokens = opt("--prompt", 16), gen = opt("--gen", 64), threads = opt("--threads", 2), runs = opt("--runs", 3);

const llama = await getLlama({gpu: false, build: "never"});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: Math.max(512, promptTokens + gen + 8), threads, batchSize: Math.max(512, promptTokens)});
const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const prefill = [], decode = [];
let continuation = [];
for (let r = 0; r < runs; r++) {
    const seq = context.getSequence();
    const prompt = Array.from({length: promptTokens}, (_, i) => 300 + i);
    const tokens = [];
    const t0 = performance.now();
    let t1 = 0;
    // yieldEogToken: past an end-of-text token, as Kiln's side of the benchmark goes on (its greedy loop ignores EOS)
    for await (const token of seq.evaluate(prompt, {temperature: 0, yieldEogToken: true})) {
        if (tokens.length === 0) t1 = performance.now();
        tokens.push(token);
        if (tokens.length > gen) break;
    }
    const t2 = performance.now();
    prefill.push(promptTokens / ((t1 - t0) / 1000));
    decode.push(gen / ((t2 - t1) / 1000));
    continuation = tokens.slice(0, gen + 1);
    seq.dispose();
}
console.log(JSON.stringify({
    peer: "llama.cpp (node-llama-cpp 3.21.1, CPU)", model: modelPath, threads, promptTokens, gen,
    prefillTokensPerSecond: median(prefill), decodeTokensPerSecond: median(decode),
    prefillRuns: prefill, decodeRuns: decode, greedy: continuation
}));
await context.dispose();
await model.dispose();
