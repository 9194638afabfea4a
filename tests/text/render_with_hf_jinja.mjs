// The oracle for troupe's chat template tests: renders chat cases with @huggingface/jinja
// (an independent Jinja implementation) the way transformers' apply_chat_template does.
//
//   node render_with_hf_jinja.mjs INPUT.json
//
// INPUT: {"template": source, "bos_token": string|null, "eos_token": string|null,
//         "cases": [{"messages": [...], "tools": [...]?, "add_generation_prompt": bool?,
//                    "kwargs": {...}?}, ...]}
// Prints a JSON array with {"text": rendered} or {"error": message} per case.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const template = new Template(input.template);
// transformers passes only the special tokens a tokenizer has.
const special = {};
for (const key of ["bos_token", "eos_token"]) if (input[key] != null) special[key] = input[key];

const results = input.cases.map((c) => {
  const variables = {
    messages: c.messages,
    tools: c.tools ?? null,
    documents: null,
    add_generation_prompt: c.add_generation_prompt ?? false,
    ...special,
    ...(c.kwargs ?? {}),
  };
  try {
    return { text: template.render(variables) };
  } catch (e) {
    return { error: e.message };
  }
});
process.stdout.write(JSON.stringify(results));
