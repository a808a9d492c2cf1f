import { parse as parseYaml } from 'yaml';
import { DocumentRefusal, type ParsedDocument } from './parsed.js';

/** Front matter: a YAML block between `---` lines at the very start (as Jekyll, Hugo and Obsidian write it). */
const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/**
 * A Markdown file: its text kept as written (so a chunk quotes the source, headings and all; corpus/outline.ts reads
 * its headings), less its front matter, whose keys become the document's metadata. A front matter that is not a YAML
 * mapping is refused rather than indexed as text. The title is the front matter's, else the first heading's.
 */
export function parseMarkdown(source: string, maxMetadataBytes: number): ParsedDocument {
  const text = source.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const match = FRONT_MATTER.exec(text);
  const front = match === null ? {} : frontMatter(match[1] ?? '', maxMetadataBytes);
  const body = (match === null ? text : text.slice(match[0].length)).trim();
  const title = typeof front.title === 'string' ? front.title : firstHeading(body);
  return { text: body, meta: { ...front, ...(title === undefined ? {} : { title }), format: 'markdown' } };
}

/**
 * Keys whose meaning the server gives, never a file's own say: `source` decides a document's trust (§15.2), `pages`
 * whether it is paginated; `format`, `path` and `uri` are what the reader and ingest found.
 */
const RESERVED = ['source', 'pages', 'format', 'path', 'uri'];

function frontMatter(yaml: string, maxMetadataBytes: number): Record<string, unknown> {
  // Metadata is at most maxMetadataBytes as JSON: YAML four times that size cannot be metadata (whatever its comments).
  if (yaml.length > 4 * maxMetadataBytes) {
    throw new DocumentRefusal(`its front matter of ${yaml.length} characters is over the metadata limit`);
  }
  let value: unknown;
  try {
    // Aliases bounded (a "billion laughs" of anchors is refused by the parser, not expanded); keys not checked for
    // duplicates, which costs time quadratic in their number (the last one wins, as in JSON).
    value = parseYaml(yaml, { maxAliasCount: 100, prettyErrors: false, uniqueKeys: false });
  } catch (error) {
    throw new DocumentRefusal(`its front matter is not YAML (${(error as Error).message.split('\n', 1)[0]})`);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new DocumentRefusal('its front matter is not a mapping');
  // Dates become strings: metadata is JSON (§4.6 timestamps as RFC 3339).
  const meta = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  for (const key of RESERVED) delete meta[key];
  return meta;
}

function firstHeading(text: string): string | undefined {
  return /^#\s+(.+?)\s*#*\s*$/m.exec(text)?.[1];
}

/** A plain text file: line ends made `\n`; the title is the caller's (its file name). */
export function parseText(source: string): ParsedDocument {
  return { text: source.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n'), meta: { format: 'text' } };
}
