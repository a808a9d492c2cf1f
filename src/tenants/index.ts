/**
 * Named corpora (docs/tenants.md): many corpora in one process, each an engine of its own (§7.13), each tenant
 * confined to the corpora its key names (§15.6). The composition (app.ts) opens them; the CLI creates and drops them.
 */
export { NamedCorpora, type CorpusEngine } from './named-corpora.js';
export { catalogMethod } from './catalog.js';
export { corporaAdminMethods } from './admin.js';
export { checkName, checkRoot } from './corpus-dirs.js';
export { FolderShelf, type CorpusShelf } from './shelf.js';
export { StoreShelf } from './store-shelf.js';
