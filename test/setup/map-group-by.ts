// Vitest 5's reporter prints failures with Map.groupBy, which Node 20 lacks (Node 21+ has it).
type GroupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K) => Map<K, T[]>;
const MapWithGroupBy = Map as unknown as { groupBy?: GroupBy };
if (typeof MapWithGroupBy.groupBy !== 'function') {
  MapWithGroupBy.groupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K): Map<K, T[]> => {
    const groups = new Map<K, T[]>();
    let index = 0;
    for (const item of items) {
      const k = key(item, index++);
      groups.set(k, [...(groups.get(k) ?? []), item]);
    }
    return groups;
  };
}
