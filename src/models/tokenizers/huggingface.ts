import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as library from '@huggingface/tokenizers';

/**
 * The slice of the library's Tokenizer we use. Its published .d.ts files import each other without file extensions,
 * which NodeNext resolution cannot follow, so the class is typed here rather than left as `any`.
 */
interface LibraryTokenizer {
  tokenize(text: string): string[];
  token_to_id(token: string): number | undefined;
  readonly post_processor:
    | ((
        first: string[],
        second: string[] | null,
        addSpecialTokens: boolean,
      ) => { tokens: string[]; token_type_ids?: number[] })
    | null;
  readonly model: { readonly unk_token_id?: number } | null;
}

const Tokenizer = (
  library as unknown as {
    Tokenizer: new (json: object, config: object) => LibraryTokenizer;
  }
).Tokenizer;

export interface EncodedText {
  readonly ids: readonly number[];
  readonly typeIds: readonly number[];
}

/**
 * Hugging Face `tokenizer.json` (WordPiece for the BERT family, and whatever else that format describes) through
 * the maintained `@huggingface/tokenizers` library. The library encodes but does not truncate, so truncation is
 * ours: to the model's limit counting the special tokens, and for a pair the passage gives way before the query.
 */
export class HuggingFaceTokenizer {
  readonly #tokenizer: LibraryTokenizer;
  readonly #specialsSingle: number;
  readonly #specialsPair: number;

  private constructor(tokenizer: LibraryTokenizer) {
    this.#tokenizer = tokenizer;
    this.#specialsSingle = this.#assemble([], null).ids.length;
    this.#specialsPair = this.#assemble([], []).ids.length;
  }

  /** Reads `tokenizer.json`, and `tokenizer_config.json` beside it when present. */
  static async load(path: string): Promise<HuggingFaceTokenizer> {
    const json = JSON.parse(await readFile(path, 'utf8')) as object;
    const configPath = join(dirname(path), 'tokenizer_config.json');
    const config = existsSync(configPath) ? (JSON.parse(await readFile(configPath, 'utf8')) as object) : {};
    return new HuggingFaceTokenizer(new Tokenizer(json, config));
  }

  /** One sequence with its special tokens, at most `maxTokens` long. */
  encode(text: string, maxTokens: number): EncodedText {
    const tokens = this.#tokenizer.tokenize(text);
    return this.#assemble(tokens.slice(0, Math.max(0, maxTokens - this.#specialsSingle)), null);
  }

  /** A (query, passage) pair: the passage is truncated first, the query only if it alone overflows. */
  encodePair(query: string, passage: string, maxTokens: number): EncodedText {
    const budget = Math.max(0, maxTokens - this.#specialsPair);
    const first = this.#tokenizer.tokenize(query).slice(0, budget);
    const second = this.#tokenizer.tokenize(passage).slice(0, budget - first.length);
    return this.#assemble(first, second);
  }

  #assemble(first: string[], second: string[] | null): EncodedText {
    const processor = this.#tokenizer.post_processor;
    const processed = processor === null ? { tokens: [...first, ...(second ?? [])] } : processor(first, second, true);
    const unknown = this.#tokenizer.model?.unk_token_id ?? 0;
    const ids = processed.tokens.map((token) => this.#tokenizer.token_to_id(token) ?? unknown);
    const typeIds =
      processed.token_type_ids ?? processed.tokens.map((_, i) => (second !== null && i >= first.length ? 1 : 0));
    return { ids, typeIds };
  }
}
