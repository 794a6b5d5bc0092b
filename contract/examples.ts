/** The document namespace of API.md ("Namespaces and what a check means"): the document's example and the tests' fixture. */
export const DOCUMENT_NAMESPACE_EXAMPLE = {
  name: 'document',
  relations: {
    parent: {},
    owner: {},
    editor: { includes: ['owner'] },
    viewer: { includes: ['editor', 'parent->viewer'] },
  },
};
