// The Node half of bench_tokenizer: encode throughput of @lenml/tokenizers on the corpus
// the C++ half wrote, measured as that half measures troupe's.
//   node tokenizer_bench.mjs DIR CORPUS.json RUNS
// Prints {"mb_per_s": median of RUNS timed passes after one warm-up, "ids": ids per pass}.
import { readFileSync } from "node:fs";
import { TokenizerLoader } from "@lenml/tokenizers";

const [dir, corpusPath, runs] = process.argv.slice(2);
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson(`${dir}/tokenizer.json`),
  tokenizerConfig: readJson(`${dir}/tokenizer_config.json`),
});
const documents = readJson(corpusPath);
const bytes = documents.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);

const pass = () => {
  let ids = 0;
  for (const d of documents) ids += tokenizer.encode(d, { add_special_tokens: false }).length;
  return ids;
};
const ids = pass();
const rates = [];
for (let r = 0; r < Number(runs); ++r) {
  const start = process.hrtime.bigint();
  pass();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  rates.push(bytes / 1e6 / seconds);
}
rates.sort((a, b) => a - b);
process.stdout.write(JSON.stringify({ mb_per_s: rates[Math.floor(rates.length / 2)], ids }));
