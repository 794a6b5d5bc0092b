/** The document namespace of docs/model.md#namespaces: the OpenAPI document's example and the tests' fixture. */
export const DOCUMENT_NAMESPACE_EXAMPLE = {
  name: 'document',
  relations: {
    parent: {},
    owner: {},
    editor: { includes: ['owner'] },
    viewer: { includes: ['editor', 'parent->viewer'] },
  },
};
