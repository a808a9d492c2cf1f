/** The content port (docs/architecture.md §3): what methods may ask of the uri fetcher (§4.8). */

/**
 * Dereferences a Content block's `uri` to text (§4.8) under the operator's policy (§15.5). Rejects with -32602 naming
 * `field` when the policy refuses the uri or what it points at is not usable text.
 */
export interface UriFetcher {
  fetchText(uri: string, field: string, signal: AbortSignal): Promise<string>;
  /**
   * The bytes a uri names and the media type its server gave (none for a file), for a document to be parsed
   * (docs/documents.md): text, or one of the document types `documentTypes` lists; anything else is -32602.
   */
  fetchBytes(
    uri: string,
    field: string,
    signal: AbortSignal,
    documentTypes: readonly string[],
  ): Promise<{ readonly bytes: Buffer; readonly mediaType: string | undefined }>;
}
