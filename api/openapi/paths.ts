/** Where the document is served (the /docs page and its route both name it). */
export const OPENAPI_DOC_PATH = '/api/v2/openapi.json';
