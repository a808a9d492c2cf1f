/**
 * Documents' entry (docs/architecture.md §3, docs/documents.md): files of the formats people keep (PDF, Word, HTML,
 * Markdown, text) read into text whose headings and pages the corpus can follow, each in a bounded parser process.
 */
export { DOCUMENT_MEDIA_TYPES, detectFormat, isDocumentName, type DocumentHint } from './detect.js';
export { DocumentRefusal, type DocumentFormat, type ParsedDocument } from './parsed.js';
export { DocumentParser, type ParserLimits } from './parser-pool.js';
export { cannotRead, readFileBytes } from './read-file.js';
