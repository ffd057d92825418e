//! The API names of the kinds recorded as [`Kind::Other`] that this project knows: the objects
//! beside the ones the analyzer has a variant for that decide what runs and where requests go.
//!
//! One table serves the recorder (which resource to list and watch, in which version), the
//! replay server (the plural and short names kubectl asks for) and the CLI (`--kinds` names).

use crate::Kind;

/// How the API names one kind: its group, the versions it may be served in (the first served
/// one is recorded), its kind, plural and short names, and whether it is namespaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiNames {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// Versions to try, newest first.
    pub versions: &'static [&'static str],
    /// The object's `kind`.
    pub kind: &'static str,
    /// Lowercase plural, as in URLs and RBAC rules.
    pub plural: &'static str,
    /// Short names kubectl accepts.
    pub short_names: &'static [&'static str],
    /// False for a cluster-scoped kind: listed and watched once, across the cluster.
    pub namespaced: bool,
}

impl ApiNames {
    /// The kind in version `version`.
    pub fn kind_in(&self, version: &str) -> Kind {
        Kind::Other {
            group: self.group.to_owned(),
            version: version.to_owned(),
            kind: self.kind.to_owned(),
        }
    }

    /// The kind in its newest version.
    pub fn newest(&self) -> Kind {
        self.kind_in(self.versions[0])
    }

    /// True when `kind` is this one, in any version.
    pub fn is(&self, kind: &Kind) -> bool {
        matches!(kind, Kind::Other { group, kind, .. } if group == self.group && kind == self.kind)
    }
}

/// `apps/v1` Deployment: the template of a `workloadRef` rollout, and plain Deployments.
pub const DEPLOYMENT: ApiNames = ApiNames {
    group: "apps",
    versions: &["v1"],
    kind: "Deployment",
    plural: "deployments",
    short_names: &["deploy"],
    namespaced: true,
};

/// `v1` Endpoints: what older clusters and many runbooks read for a Service's backends.
pub const ENDPOINTS: ApiNames = ApiNames {
    group: "",
    versions: &["v1"],
    kind: "Endpoints",
    plural: "endpoints",
    short_names: &["ep"],
    namespaced: true,
};

/// `networking.k8s.io/v1` Ingress, including the canary Ingress Argo Rollouts manages for NGINX.
pub const INGRESS: ApiNames = ApiNames {
    group: "networking.k8s.io",
    versions: &["v1"],
    kind: "Ingress",
    plural: "ingresses",
    short_names: &["ing"],
    namespaced: true,
};

/// Gateway API HTTPRoute.
pub const HTTP_ROUTE: ApiNames = ApiNames {
    group: "gateway.networking.k8s.io",
    versions: &["v1", "v1beta1"],
    kind: "HTTPRoute",
    plural: "httproutes",
    short_names: &[],
    namespaced: true,
};

/// Istio VirtualService.
pub const VIRTUAL_SERVICE: ApiNames = ApiNames {
    group: "networking.istio.io",
    versions: &["v1", "v1beta1", "v1alpha3"],
    kind: "VirtualService",
    plural: "virtualservices",
    short_names: &["vs"],
    namespaced: true,
};

/// Istio DestinationRule.
pub const DESTINATION_RULE: ApiNames = ApiNames {
    group: "networking.istio.io",
    versions: &["v1", "v1beta1", "v1alpha3"],
    kind: "DestinationRule",
    plural: "destinationrules",
    short_names: &["dr"],
    namespaced: true,
};

/// Argo Rollouts AnalysisRun: a canary's measurements, each metric's query, value and phase.
pub const ANALYSIS_RUN: ApiNames = ApiNames {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "AnalysisRun",
    plural: "analysisruns",
    short_names: &["ar"],
    namespaced: true,
};

/// Argo Rollouts AnalysisTemplate: the metrics a rollout's analysis steps name.
pub const ANALYSIS_TEMPLATE: ApiNames = ApiNames {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "AnalysisTemplate",
    plural: "analysistemplates",
    short_names: &["at"],
    namespaced: true,
};

/// Argo Rollouts ClusterAnalysisTemplate: cluster-scoped metrics an analysis may name.
pub const CLUSTER_ANALYSIS_TEMPLATE: ApiNames = ApiNames {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "ClusterAnalysisTemplate",
    plural: "clusteranalysistemplates",
    short_names: &["cat"],
    namespaced: false,
};

/// Argo Rollouts Experiment: ReplicaSets a rollout's experiment step runs beside its revisions.
pub const EXPERIMENT: ApiNames = ApiNames {
    group: "argoproj.io",
    versions: &["v1alpha1"],
    kind: "Experiment",
    plural: "experiments",
    short_names: &["exp"],
    namespaced: true,
};

/// Flux HelmRelease: the Helm upgrades that render a chart's objects (its attempts and history).
pub const HELM_RELEASE: ApiNames = ApiNames {
    group: "helm.toolkit.fluxcd.io",
    versions: &["v2", "v2beta2", "v2beta1"],
    kind: "HelmRelease",
    plural: "helmreleases",
    short_names: &["hr"],
    namespaced: true,
};

/// Flux Kustomization: the applies of a Git revision's manifests.
pub const KUSTOMIZATION: ApiNames = ApiNames {
    group: "kustomize.toolkit.fluxcd.io",
    versions: &["v1", "v1beta2"],
    kind: "Kustomization",
    plural: "kustomizations",
    short_names: &["ks"],
    namespaced: true,
};

/// Every kind of the table, in the order the recorder lists them.
pub const WELL_KNOWN: [ApiNames; 12] = [
    DEPLOYMENT,
    ENDPOINTS,
    INGRESS,
    HTTP_ROUTE,
    VIRTUAL_SERVICE,
    DESTINATION_RULE,
    ANALYSIS_RUN,
    ANALYSIS_TEMPLATE,
    CLUSTER_ANALYSIS_TEMPLATE,
    EXPERIMENT,
    HELM_RELEASE,
    KUSTOMIZATION,
];

/// The table's entry of `kind` (any version), if it has one.
pub fn well_known(kind: &Kind) -> Option<&'static ApiNames> {
    WELL_KNOWN.iter().find(|n| n.is(kind))
}

/// The table's entry a user names: plural, singular or short name, any case.
pub fn by_name(name: &str) -> Option<&'static ApiNames> {
    let name = name.trim().to_ascii_lowercase();
    WELL_KNOWN.iter().find(|n| {
        n.plural == name || n.kind.eq_ignore_ascii_case(&name) || n.short_names.contains(&&*name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_their_entry_in_any_form() {
        assert_eq!(by_name("Ingresses"), Some(&INGRESS));
        assert_eq!(by_name("ingress"), Some(&INGRESS));
        assert_eq!(by_name("deploy"), Some(&DEPLOYMENT));
        assert_eq!(by_name("vs"), Some(&VIRTUAL_SERVICE));
        assert_eq!(by_name("httproute"), Some(&HTTP_ROUTE));
        assert_eq!(by_name("ingresss"), None);
    }

    #[test]
    fn a_kind_in_any_version_is_its_entry() {
        let old = Kind::from_api("networking.istio.io/v1alpha3", "VirtualService");
        assert_eq!(well_known(&old), Some(&VIRTUAL_SERVICE));
        assert_eq!(well_known(&Kind::ReplicaSet), None);
        let other_group = Kind::from_api("example.com/v1", "Deployment");
        assert_eq!(well_known(&other_group), None);
        assert_eq!(DEPLOYMENT.newest().api_version(), "apps/v1");
    }
}
