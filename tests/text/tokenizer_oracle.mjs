// Encodes and decodes texts with @lenml/tokenizers, the independent implementation that
// troupe's tokenizer is checked against (tests/text/test_tokenizer_oracle.cpp).
//   node tokenizer_oracle.mjs DIR TEXTS.json
// DIR holds tokenizer.json and tokenizer_config.json; TEXTS.json is a list of strings.
// Prints a JSON list with, for each text, {ids, decoded, decoded_skip}.
import { readFileSync } from "node:fs";
import { TokenizerLoader } from "@lenml/tokenizers";

const [dir, textsPath] = process.argv.slice(2);
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson(`${dir}/tokenizer.json`),
  tokenizerConfig: readJson(`${dir}/tokenizer_config.json`),
});

// Hugging Face tokenizers' decode: no clean-up of spaces (transformers adds that on top
// when tokenizer_config.json asks). @lenml/tokenizers throws on an empty list.
const decode = (ids, skip) =>
  ids.length === 0
    ? ""
    : tokenizer.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });

const results = readJson(textsPath).map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  return { ids, decoded: decode(ids, false), decoded_skip: decode(ids, true) };
});
process.stdout.write(JSON.stringify(results));
