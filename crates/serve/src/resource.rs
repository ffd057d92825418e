//! How each recorded kind is named in the Kubernetes API: group, version, plural, short names.

use rf_format::Kind;

/// One served resource type: the API names of a recorded [`Kind`].
///
/// Every served resource answers only `get`, `list` and `watch`; all are namespaced but the
/// cluster-scoped kinds of [`rf_format::api::WELL_KNOWN`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The recorded kind.
    pub kind: Kind,
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Lowercase plural used in paths (`replicasets`).
    pub plural: String,
    /// Lowercase singular (`replicaset`).
    pub singular: String,
    /// Short names kubectl accepts (`rs`).
    pub short_names: Vec<String>,
}

impl Resource {
    /// The API names of `kind`. Kinds without their own variant take theirs from
    /// [`rf_format::api::WELL_KNOWN`]; any other gets the lowercase kind plus `s` as its plural
    /// (best effort: a `Policy` of some CRD would become `policys`).
    pub fn for_kind(kind: &Kind) -> Resource {
        let known = rf_format::api::well_known(kind);
        let (group, version, plural, short): (&str, &str, String, &[&str]) = match kind {
            Kind::Rollout => ("argoproj.io", "v1alpha1", "rollouts".into(), &["ro"]),
            Kind::Application => (
                "argoproj.io",
                "v1alpha1",
                "applications".into(),
                &["app", "apps"],
            ),
            Kind::ReplicaSet => ("apps", "v1", "replicasets".into(), &["rs"]),
            Kind::Service => ("", "v1", "services".into(), &["svc"]),
            Kind::EndpointSlice => ("discovery.k8s.io", "v1", "endpointslices".into(), &[]),
            Kind::Pod => ("", "v1", "pods".into(), &["po"]),
            Kind::Event => ("", "v1", "events".into(), &["ev"]),
            Kind::Other {
                group,
                version,
                kind,
            } => {
                return Resource {
                    kind: Kind::Other {
                        group: group.clone(),
                        version: version.clone(),
                        kind: kind.clone(),
                    },
                    group: group.clone(),
                    version: version.clone(),
                    plural: known.map_or_else(
                        || format!("{}s", kind.to_lowercase()),
                        |n| n.plural.to_owned(),
                    ),
                    singular: kind.to_lowercase(),
                    short_names: known
                        .map(|n| n.short_names.iter().map(|s| (*s).to_owned()).collect())
                        .unwrap_or_default(),
                };
            }
        };
        Resource {
            kind: kind.clone(),
            group: group.to_owned(),
            version: version.to_owned(),
            plural,
            singular: kind.name().to_lowercase(),
            short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// The `apiVersion` of objects of this resource (`apps/v1`, or `v1` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind name (`ReplicaSet`).
    pub fn kind_name(&self) -> &str {
        self.kind.name()
    }

    /// The resource as kubectl names it in messages: `replicasets.apps`, or `pods`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The path prefix of its group version: `/apis/apps/v1`, or `/api/v1`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kinds_have_kubectl_names() {
        let rs = Resource::for_kind(&Kind::ReplicaSet);
        assert_eq!(rs.plural, "replicasets");
        assert_eq!(rs.api_version(), "apps/v1");
        assert_eq!(rs.qualified(), "replicasets.apps");
        assert_eq!(rs.short_names, ["rs"]);
        let ro = Resource::for_kind(&Kind::Rollout);
        assert_eq!(ro.group_version_path(), "/apis/argoproj.io/v1alpha1");
        assert_eq!(ro.singular, "rollout");
        let ev = Resource::for_kind(&Kind::Event);
        assert_eq!(ev.group_version_path(), "/api/v1");
        assert_eq!(ev.qualified(), "events");
    }

    #[test]
    fn other_kinds_get_a_lowercase_plural() {
        let r = Resource::for_kind(&Kind::Other {
            group: "networking.k8s.io".into(),
            version: "v1".into(),
            kind: "NetworkPolicy".into(),
        });
        assert_eq!(r.plural, "networkpolicys");
        assert_eq!(r.api_version(), "networking.k8s.io/v1");
        assert_eq!(r.kind_name(), "NetworkPolicy");
    }

    #[test]
    fn well_known_kinds_have_their_api_plurals() {
        let ing = Resource::for_kind(&rf_format::api::INGRESS.newest());
        assert_eq!(ing.plural, "ingresses");
        assert_eq!(ing.short_names, ["ing"]);
        let ep = Resource::for_kind(&rf_format::api::ENDPOINTS.newest());
        assert_eq!(ep.plural, "endpoints");
        assert_eq!(ep.qualified(), "endpoints");
    }
}
