//! Which API resource each recorded kind is, and where to list and watch it.

use rf_format::Kind;

/// An API resource the recorder can watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The recorded kind.
    pub kind: Kind,
    /// API group; empty for the core group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Plural resource name, as in URLs and RBAC rules.
    pub plural: &'static str,
}

impl Resource {
    /// The resource of a kind the recorder knows.
    pub fn for_kind(kind: &Kind) -> Option<Resource> {
        let (group, version, plural) = match kind {
            Kind::Rollout => ("argoproj.io", "v1alpha1", "rollouts"),
            Kind::Application => ("argoproj.io", "v1alpha1", "applications"),
            Kind::ReplicaSet => ("apps", "v1", "replicasets"),
            Kind::Service => ("", "v1", "services"),
            Kind::EndpointSlice => ("discovery.k8s.io", "v1", "endpointslices"),
            Kind::Pod => ("", "v1", "pods"),
            Kind::Event => ("", "v1", "events"),
            Kind::Other { .. } => return None,
        };
        Some(Resource {
            kind: kind.clone(),
            group,
            version,
            plural,
        })
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `rollouts.argoproj.io`, `pods`: the name kubectl and RBAC use.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The collection's URL path, in `namespace` or across all namespaces.
    pub fn url_path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.plural),
            None => format!("{base}/{}", self.plural),
        }
    }
}

/// The kinds `--kinds` accepts, by the names people type.
pub fn parse_kind(name: &str) -> Option<Kind> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "rollouts" | "rollout" | "ro" => Kind::Rollout,
        "replicasets" | "replicaset" | "rs" => Kind::ReplicaSet,
        "services" | "service" | "svc" => Kind::Service,
        "endpointslices" | "endpointslice" => Kind::EndpointSlice,
        "pods" | "pod" | "po" => Kind::Pod,
        "applications" | "application" | "app" | "apps" => Kind::Application,
        "events" | "event" | "ev" => Kind::Event,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_paths_follow_the_api_conventions() {
        let ro = Resource::for_kind(&Kind::Rollout).unwrap();
        assert_eq!(
            ro.url_path(Some("payments")),
            "/apis/argoproj.io/v1alpha1/namespaces/payments/rollouts"
        );
        assert_eq!(ro.qualified(), "rollouts.argoproj.io");
        let po = Resource::for_kind(&Kind::Pod).unwrap();
        assert_eq!(po.url_path(None), "/api/v1/pods");
        assert_eq!(po.api_version(), "v1");
    }

    #[test]
    fn kinds_parse_by_plural_singular_and_short_name() {
        assert_eq!(parse_kind("rs"), Some(Kind::ReplicaSet));
        assert_eq!(parse_kind("Rollouts"), Some(Kind::Rollout));
        assert_eq!(parse_kind("deployments"), None);
    }
}
