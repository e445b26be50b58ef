// What the terminal's search bar says about its results, as VS Code's terminal find does: "3 of 17",
// "17 results" when no match is selected, "More than 1000" past the addon's highlight limit (it then
// stops counting and reports index -1), "No results", or why the query cannot be searched.

/** The search addon highlights (and counts) at most this many matches. */
export const SEARCH_HIGHLIGHT_LIMIT = 1000;

export interface SearchResults {
  resultIndex: number;
  resultCount: number;
}

export interface SearchLabel {
  /** A key of the terminal namespace. */
  key: 'search.position' | 'search.results' | 'search.many' | 'search.none' | 'search.badRegex';
  params?: { index?: number; count: number };
}

/** The label for a query's results; null while there is no query (nothing to say). */
export function searchLabel(
  query: string,
  results: SearchResults | null,
  opts: { regex: boolean; limit?: number },
): SearchLabel | null {
  if (!query) return null;
  if (opts.regex && regexProblem(query)) return { key: 'search.badRegex' };
  if (!results) return null;
  const limit = opts.limit ?? SEARCH_HIGHLIGHT_LIMIT;
  const { resultIndex, resultCount } = results;
  if (resultCount <= 0) return { key: 'search.none' };
  if (resultIndex < 0 && resultCount >= limit) return { key: 'search.many', params: { count: limit } };
  if (resultIndex < 0) return { key: 'search.results', params: { count: resultCount } };
  return { key: 'search.position', params: { index: resultIndex + 1, count: resultCount } };
}

/** Why a query is not a regular expression JavaScript accepts (the addon compiles it the same way), or null. */
export function regexProblem(query: string): string | null {
  try {
    new RegExp(query, 'g');
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
