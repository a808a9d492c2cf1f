/**
 * Server-side chunking (§7.10 `chunk: true`): overlapping chunks that end on sentence boundaries and fit the
 * encoder's token limit. Sentences come from `Intl.Segmenter`; a markdown heading starts a new chunk and becomes the
 * chunk's `heading` (the situating context for `contextual: true`). Consecutive chunks share one sentence of overlap
 * when it fits. A sentence longer than the limit on its own is cut at word boundaries.
 */
export interface Chunk {
  readonly text: string;
  /** The nearest markdown heading above the chunk, if any. */
  readonly heading: string | undefined;
}

export type TokenCounter = (text: string) => number;

const HEADING = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/;
const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

interface Section {
  readonly heading: string | undefined;
  readonly body: string;
}

function sections(text: string): Section[] {
  const out: Section[] = [];
  let heading: string | undefined;
  let lines: string[] = [];
  const flush = () => {
    const body = lines.join('\n').trim();
    if (body !== '') out.push({ heading, body });
    lines = [];
  };
  for (const line of text.split('\n')) {
    const match = HEADING.exec(line);
    if (match === null) {
      lines.push(line);
      continue;
    }
    flush();
    heading = match[1];
  }
  flush();
  return out;
}

/** Cuts one over-long sentence into word windows that each fit. */
function cutWords(sentence: string, count: TokenCounter, limit: number): string[] {
  const pieces: string[] = [];
  let current: string[] = [];
  for (const word of sentence.split(/\s+/).filter(Boolean)) {
    if (current.length > 0 && count([...current, word].join(' ')) > limit) {
      pieces.push(current.join(' '));
      current = [];
    }
    current.push(word);
  }
  if (current.length > 0) pieces.push(current.join(' '));
  return pieces;
}

export function chunkText(text: string, count: TokenCounter, maxTokens: number): Chunk[] {
  const chunks: Chunk[] = [];
  for (const { heading, body } of sections(text)) {
    const sentences = [...segmenter.segment(body)]
      .map((s) => s.segment.trim())
      .filter(Boolean)
      .flatMap((sentence) => (count(sentence) > maxTokens ? cutWords(sentence, count, maxTokens) : [sentence]));
    let current: string[] = [];
    let tokens = 0;
    for (const sentence of sentences) {
      const size = count(sentence);
      if (current.length > 0 && tokens + size > maxTokens) {
        chunks.push({ text: current.join(' '), heading });
        const overlap = current[current.length - 1] ?? '';
        const overlapSize = count(overlap);
        current = overlapSize + size <= maxTokens ? [overlap] : [];
        tokens = current.length > 0 ? overlapSize : 0;
      }
      current.push(sentence);
      tokens += size;
    }
    if (current.length > 0) chunks.push({ text: current.join(' '), heading });
  }
  return chunks.length > 0 ? chunks : [{ text: text.trim(), heading: undefined }];
}
