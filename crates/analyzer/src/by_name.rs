//! A map by (namespace, name) that is looked up with a record's own `&str`s: the analyzer's
//! per-record lookups copy no key, and a key is copied only for a new entry. Iteration is in
//! (namespace, name) order, as a map keyed by the pair would be.

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub(crate) struct ByName<V> {
    by_ns: BTreeMap<String, BTreeMap<String, V>>,
}

impl<V> Default for ByName<V> {
    fn default() -> Self {
        ByName {
            by_ns: BTreeMap::new(),
        }
    }
}

impl<V> ByName<V> {
    pub fn get(&self, ns: &str, name: &str) -> Option<&V> {
        self.by_ns.get(ns)?.get(name)
    }

    pub fn get_mut(&mut self, ns: &str, name: &str) -> Option<&mut V> {
        self.by_ns.get_mut(ns)?.get_mut(name)
    }

    pub fn contains(&self, ns: &str, name: &str) -> bool {
        self.get(ns, name).is_some()
    }

    /// Makes the entry of (`ns`, `name`) with `make` when there is none.
    pub fn ensure(&mut self, ns: &str, name: &str, make: impl FnOnce() -> V) {
        let names = match self.by_ns.get_mut(ns) {
            Some(names) => names,
            None => self.by_ns.entry(ns.to_owned()).or_default(),
        };
        if !names.contains_key(name) {
            names.insert(name.to_owned(), make());
        }
    }

    /// Sets the value of (`ns`, `name`).
    pub fn set(&mut self, ns: &str, name: &str, value: V) {
        if let Some(v) = self.get_mut(ns, name) {
            *v = value;
        } else {
            self.ensure(ns, name, || value);
        }
    }

    pub fn remove(&mut self, ns: &str, name: &str) -> Option<V> {
        let names = self.by_ns.get_mut(ns)?;
        let v = names.remove(name)?;
        if names.is_empty() {
            self.by_ns.remove(ns);
        }
        Some(v)
    }

    pub fn len(&self) -> usize {
        self.by_ns.values().map(BTreeMap::len).sum()
    }

    /// Every entry, in (namespace, name) order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &V)> {
        self.by_ns.iter().flat_map(|(ns, names)| {
            names
                .iter()
                .map(move |(name, v)| (ns.as_str(), name.as_str(), v))
        })
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.by_ns.values().flat_map(BTreeMap::values)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.by_ns.values_mut().flat_map(BTreeMap::values_mut)
    }

    /// The entries of namespace `ns`, in name order.
    pub fn in_ns<'a>(&'a self, ns: &str) -> impl Iterator<Item = (&'a str, &'a V)> + 'a {
        self.by_ns
            .get(ns)
            .into_iter()
            .flatten()
            .map(|(name, v)| (name.as_str(), v))
    }
}
