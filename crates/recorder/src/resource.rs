//! Which API resource each recorded kind is, and where to list and watch it.

use rf_format::{Kind, api};

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
    /// False for a cluster-scoped resource: watched once, never per namespace.
    pub namespaced: bool,
}

impl Resource {
    /// The resource of a kind the recorder knows: one with its own variant, or one of
    /// [`rf_format::api::WELL_KNOWN`] in a version the table names.
    pub fn for_kind(kind: &Kind) -> Option<Resource> {
        let (group, version, plural, namespaced) = match kind {
            Kind::Rollout => ("argoproj.io", "v1alpha1", "rollouts", true),
            Kind::Application => ("argoproj.io", "v1alpha1", "applications", true),
            Kind::ReplicaSet => ("apps", "v1", "replicasets", true),
            Kind::Service => ("", "v1", "services", true),
            Kind::EndpointSlice => ("discovery.k8s.io", "v1", "endpointslices", true),
            Kind::Pod => ("", "v1", "pods", true),
            Kind::Event => ("", "v1", "events", true),
            Kind::Other { version, .. } => {
                let names = api::well_known(kind)?;
                let version = names.versions.iter().find(|v| **v == version)?;
                (names.group, *version, names.plural, names.namespaced)
            }
        };
        Some(Resource {
            kind: kind.clone(),
            group,
            version,
            plural,
            namespaced,
        })
    }

    /// The resources `kind` may be served as, in the order to try them: a kind of the
    /// well-known table in each of its versions, any other kind as itself.
    pub fn candidates(kind: &Kind) -> Vec<Resource> {
        match api::well_known(kind) {
            Some(names) => names
                .versions
                .iter()
                .filter_map(|v| Resource::for_kind(&names.kind_in(v)))
                .collect(),
            None => Resource::for_kind(kind).into_iter().collect(),
        }
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

    /// The collection's URL path, in `namespace` or across all namespaces (always across the
    /// cluster for a cluster-scoped resource).
    pub fn url_path(&self, namespace: Option<&str>) -> String {
        let namespace = namespace.filter(|_| self.namespaced);
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

/// Every kind `record --kinds` takes, by its plural: the recorder's own, then the API table's
/// ([`rf_format::api::WELL_KNOWN`]).
pub const KIND_NAMES: [&str; 19] = [
    "rollouts",
    "replicasets",
    "services",
    "endpointslices",
    "pods",
    "applications",
    "events",
    "deployments",
    "endpoints",
    "ingresses",
    "httproutes",
    "virtualservices",
    "destinationrules",
    "analysisruns",
    "analysistemplates",
    "clusteranalysistemplates",
    "experiments",
    "helmreleases",
    "kustomizations",
];

/// The kinds `--kinds` accepts, by the names people type: the kinds with their own variant,
/// and those of [`rf_format::api::WELL_KNOWN`] (in their newest version; the recorder takes the
/// first version the server serves).
pub fn parse_kind(name: &str) -> Option<Kind> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "rollouts" | "rollout" | "ro" => Kind::Rollout,
        "replicasets" | "replicaset" | "rs" => Kind::ReplicaSet,
        "services" | "service" | "svc" => Kind::Service,
        "endpointslices" | "endpointslice" => Kind::EndpointSlice,
        "pods" | "pod" | "po" => Kind::Pod,
        "applications" | "application" | "app" | "apps" => Kind::Application,
        "events" | "event" | "ev" => Kind::Event,
        other => return api::by_name(other).map(api::ApiNames::newest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_scoped_resource_is_listed_across_the_cluster_whatever_the_namespace() {
        let r = Resource::for_kind(&rf_format::api::CLUSTER_ANALYSIS_TEMPLATE.newest()).unwrap();
        assert!(!r.namespaced);
        assert_eq!(
            r.url_path(Some("payments")),
            "/apis/argoproj.io/v1alpha1/clusteranalysistemplates"
        );
        let r = Resource::for_kind(&rf_format::api::ANALYSIS_TEMPLATE.newest()).unwrap();
        assert_eq!(
            r.url_path(Some("payments")),
            "/apis/argoproj.io/v1alpha1/namespaces/payments/analysistemplates"
        );
    }

    #[test]
    fn every_kind_name_parses_and_every_kind_of_the_api_table_is_named() {
        for name in KIND_NAMES {
            assert!(parse_kind(name).is_some(), "{name}");
        }
        for names in &rf_format::api::WELL_KNOWN {
            assert!(KIND_NAMES.contains(&names.plural), "{}", names.plural);
        }
    }

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
        let ing = Resource::for_kind(&api::INGRESS.newest()).unwrap();
        assert_eq!(
            ing.url_path(Some("web")),
            "/apis/networking.k8s.io/v1/namespaces/web/ingresses"
        );
    }

    #[test]
    fn a_well_known_kind_is_tried_in_each_version_and_no_other_is_recorded() {
        let vs: Vec<String> = Resource::candidates(&api::VIRTUAL_SERVICE.newest())
            .iter()
            .map(Resource::api_version)
            .collect();
        assert_eq!(
            vs,
            [
                "networking.istio.io/v1",
                "networking.istio.io/v1beta1",
                "networking.istio.io/v1alpha3"
            ]
        );
        let unknown = Kind::from_api("example.com/v1", "Widget");
        assert!(Resource::for_kind(&unknown).is_none());
        assert!(Resource::candidates(&unknown).is_empty());
        let old_version = Kind::from_api("apps/v1beta1", "Deployment");
        assert!(Resource::for_kind(&old_version).is_none());
    }

    #[test]
    fn kinds_parse_by_plural_singular_and_short_name() {
        assert_eq!(parse_kind("rs"), Some(Kind::ReplicaSet));
        assert_eq!(parse_kind("Rollouts"), Some(Kind::Rollout));
        assert_eq!(parse_kind("deployments"), Some(api::DEPLOYMENT.newest()));
        assert_eq!(parse_kind("ing"), Some(api::INGRESS.newest()));
        assert_eq!(parse_kind("configmaps"), None);
    }
}
