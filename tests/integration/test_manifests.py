"""The Kubernetes manifests (packaging/kubernetes) and the Grafana dashboard (packaging/grafana),
checked without a cluster, in seconds.

- yamllint with the project's packaging/kubernetes/.yamllint, warnings included.
- Each kustomization is rendered with `kubectl kustomize` (the cache-server one with a throwaway
  token), and every rendered document and example is checked: apiVersion and kind known, every
  field name in manifest_checks.SCHEMA (the fields these manifests use, so a misspelled
  `mountPropagation` or a container field at the pod level is an error), and again against the
  API models of the Debian package python3-kubernetes, which also vouch for SCHEMA itself.
- What warmfs needs: the mount container is privileged, has /dev/fuse, mounts under a hostPath
  with Bidirectional propagation, runs in the foreground, is unmounted by preStop and probed by
  `warmfs stats`; its memory limit covers --memory-cache-size + 256 MiB; a stale mount is
  detached first; the consumer job mounts the same host directory HostToContainer, read-only;
  every ConfigMap, Secret, ServiceAccount and Service named exists; command lines use only
  options `warmfs mount` / `warmfs serve` have; --cache-server names every cache server.
- The dashboard's PromQL uses only the metric names warmfs exports (METRICS), filters on the
  $instance variable, and parses (`promtool check rules`).
- Each check is also run on broken copies, to show it fails.

A missing yamllint, kubectl, promtool or python3-kubernetes fails the test
(tools/lib/install-deps.sh installs the Debian ones; kubectl comes with the machine image).
"""

import copy
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import yaml

from manifest_checks import (
    DASHBOARD, K8S, KUSTOMIZATIONS, SCHEMA, cache_server_problems, cli_options_from_help,
    cli_spec, consumer_problems, dashboard_exprs, dashboard_problems, find, host_mount_dirs,
    load_examples, metric_names, model_problems, mount_daemonset_problems, pod_spec,
    promtool_problems, reference_problems, render, require_tool, schema_problems,
)

# --- the tests -----------------------------------------------------------------------------------
class Manifests(unittest.TestCase):
    rendered: dict  # kustomization -> documents

    @classmethod
    def setUpClass(cls):
        if shutil.which("kubectl") is None:
            raise AssertionError("kubectl is not installed (kubectl kustomize renders the "
                                 "manifests; it comes with the machine image); never skipped")
        cls.rendered = {k: render(K8S / k) for k in KUSTOMIZATIONS}
        cls.examples = load_examples()
        cls.cli = cli_spec()

    def all_docs(self):
        return [d for docs in self.rendered.values() for d in docs] + self.examples

    def test_yamllint(self):
        yamllint = require_tool(self, "yamllint", "Debian package yamllint")
        run = subprocess.run([yamllint, "-c", str(K8S / ".yamllint"), "-s", "-f", "parsable",
                              str(K8S)], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_kustomizations_render_what_they_should(self):
        kinds = {k: sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
                 for k, docs in self.rendered.items()}
        self.assertIn("DaemonSet/warmfs-mount", kinds["node"])
        self.assertEqual(kinds[""], kinds["node"])
        for want in ("StatefulSet/warmfs-cache", "Service/warmfs-cache",
                     "Secret/warmfs-cache-token", "DaemonSet/warmfs-mount"):
            self.assertIn(want, kinds["cache-server"])
        for docs in self.rendered.values():
            for d in docs:
                if d["kind"] != "Namespace":
                    self.assertEqual(d["metadata"].get("namespace"), "warmfs", d["metadata"])
        # No token in git: the generator reads a file the operator makes.
        kz = yaml.safe_load((K8S / "cache-server" / "kustomization.yaml").read_text())
        for gen in kz.get("secretGenerator", []):
            self.assertNotIn("literals", gen, "a token in git is a token for everyone")
            self.assertTrue(gen.get("options", {}).get("disableNameSuffixHash"),
                            "a hashed Secret name changes the DaemonSet with every new token")

    def test_schema(self):
        for doc in self.all_docs():
            with self.subTest(doc=f"{doc['kind']}/{doc['metadata']['name']}"):
                self.assertEqual(schema_problems(doc), [])

    def test_fields_exist_in_the_kubernetes_api_models(self):
        self.assertEqual(model_problems(self, self.all_docs()), [])

    def test_references_resolve(self):
        for name, docs in self.rendered.items():
            with self.subTest(kustomization=name or "."):
                self.assertEqual(reference_problems(docs), [])
        self.assertEqual(reference_problems(self.examples), [])

    def test_mount_daemonset(self):
        for name in ("node", "cache-server"):
            with self.subTest(kustomization=name):
                self.assertEqual(mount_daemonset_problems(self.rendered[name], self.cli), [])

    def test_consumer_job(self):
        dirs = host_mount_dirs(self.rendered["node"])
        self.assertEqual(dirs, {"/mnt/warmfs"})
        self.assertEqual(consumer_problems(self.examples, dirs), [])

    def test_cache_servers(self):
        docs = self.rendered["cache-server"]
        self.assertTrue(any(d["kind"] == "StatefulSet" for d in docs))
        self.assertEqual(cache_server_problems(docs, self.cli), [])
        self.assertEqual(cache_server_problems(self.rendered["node"], self.cli), [])


class Dashboard(unittest.TestCase):
    def setUp(self):
        self.dashboard = json.loads(DASHBOARD.read_text())

    def test_importable_model(self):
        d = self.dashboard
        self.assertGreaterEqual(d.get("schemaVersion", 0), 36)
        self.assertIsNone(d.get("id"), "an exported id makes the import overwrite a dashboard")
        self.assertTrue(d.get("uid") and d.get("title"))
        for p in d["panels"]:
            self.assertTrue({"x", "y", "w", "h"} <= set(p.get("gridPos", {})), p.get("title"))

    def test_metric_names_and_variables(self):
        self.assertEqual(dashboard_problems(self.dashboard), [])

    def test_expressions_parse(self):
        self.assertEqual(promtool_problems(self, dashboard_exprs(self.dashboard)), [])

    def test_panels_an_operator_needs(self):
        used = set()
        for _, expr in dashboard_exprs(self.dashboard):
            used |= metric_names(expr)
        for m in ("warmfs_read_bytes_total", "warmfs_reader_wait_seconds_total",
                  "warmfs_read_latency_seconds_bucket", "warmfs_bucket_requests_total",
                  "warmfs_bucket_bytes_total", "warmfs_bucket_request_duration_seconds_bucket",
                  "warmfs_cache_used_bytes", "warmfs_cache_capacity_bytes",
                  "warmfs_uploads_in_flight", "warmfs_upload_failures_total",
                  "warmfs_credentials_expiry_timestamp_seconds", "warmfs_server_requests_total"):
            self.assertIn(m, used)


class ChecksFail(unittest.TestCase):
    """Each check on a broken copy: the checks above can fail."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("kubectl") is None:
            raise AssertionError("kubectl is not installed; never skipped")
        cls.node = render(K8S / "node")
        cls.servers = render(K8S / "cache-server")
        cls.examples = load_examples()
        cls.cli = cli_spec()

    def broken(self, docs, kind, edit):
        docs = copy.deepcopy(docs)
        for d in docs:
            if d["kind"] == kind:
                edit(d)
        return docs

    def mount_container(self, ds):
        return next(c for c in pod_spec(ds)["containers"] if c["name"] == "warmfs")

    def test_yamllint_catches_bad_indentation(self):
        yamllint = require_tool(self, "yamllint", "Debian package yamllint")
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "bad.yaml"
            bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n   name: x\n"
                           "data:\n  a: yes\n  a: b\n")
            run = subprocess.run([yamllint, "-c", str(K8S / ".yamllint"), "-s", str(bad)],
                                 capture_output=True, text=True, timeout=60)
        self.assertNotEqual(run.returncode, 0)
        for rule in ("indentation", "truthy", "key-duplicates"):
            self.assertIn(rule, run.stdout)

    def test_misspelled_mount_propagation(self):
        def edit(ds):
            vm = self.mount_container(ds)["volumeMounts"][0]
            vm["mountPropogation"] = vm.pop("mountPropagation")
        docs = self.broken(self.node, "DaemonSet", edit)
        ds = find(docs, "DaemonSet", "warmfs-mount")
        self.assertTrue(any("mountPropogation" in p for p in schema_problems(ds)))
        self.assertTrue(any("mountPropogation" in p for p in model_problems(self, [ds])))
        self.assertTrue(any("Bidirectional" in p
                            for p in mount_daemonset_problems(docs, self.cli)))

    def test_container_field_at_pod_level(self):
        def edit(ds):
            pod_spec(ds)["volumeMounts"] = self.mount_container(ds).pop("volumeMounts")
        ds = find(self.broken(self.node, "DaemonSet", edit), "DaemonSet", "warmfs-mount")
        self.assertTrue(any("volumeMounts: not a field of PodSpec" in p
                            for p in schema_problems(ds)))
        self.assertTrue(any("volumeMounts: not a field of V1PodSpec" in p
                            for p in model_problems(self, [ds])))

    def test_unknown_kind_and_made_up_schema_field(self):
        self.assertTrue(schema_problems({"apiVersion": "apps/v1", "kind": "Deamonset",
                                         "metadata": {"name": "x"}}))
        schema = copy.deepcopy(SCHEMA)
        schema["VolumeMount"]["propagation"] = None
        self.assertTrue(any("VolumeMount.propagation" in p
                            for p in model_problems(self, [], schema)))

    def test_mount_daemonset_without_what_fuse_needs(self):
        def edit(ds):
            c = self.mount_container(ds)
            c["securityContext"] = {}
            c["volumeMounts"] = [v for v in c["volumeMounts"] if v["mountPath"] != "/dev/fuse"]
            c["resources"]["limits"]["memory"] = "4Gi"
            c["command"][2] = c["command"][2].replace("--foreground", "--foregrund")
            del c["lifecycle"]
            pod_spec(ds)["initContainers"] = []
        problems = "\n".join(mount_daemonset_problems(self.broken(self.node, "DaemonSet", edit),
                                                      self.cli))
        for want in ("not privileged", "/dev/fuse", "memory limit", "no option --foregrund",
                     "preStop", "stale mount"):
            self.assertIn(want, problems)

    def test_bad_options_in_the_configmap(self):
        docs = self.broken(self.node, "ConfigMap", lambda cm: cm["data"].update(
            WARMFS_MOUNT_OPTIONS="--metadata-ttl --cache-sever x --memory-cache-size 1G"))
        problems = "\n".join(mount_daemonset_problems(docs, self.cli))
        self.assertIn("--metadata-ttl needs a value", problems)
        self.assertIn("no option --cache-sever", problems)
        self.assertIn("--memory-cache-size given twice", problems)

    def test_dangling_references(self):
        docs = [d for d in self.servers if d["kind"] not in ("Secret", "ServiceAccount")]
        problems = "\n".join(reference_problems(docs))
        self.assertIn("Secret warmfs/warmfs-cache-token", problems)
        self.assertIn("ServiceAccount warmfs/warmfs-mount", problems)
        docs = [d for d in self.servers if d["kind"] != "Service"]
        self.assertIn("Service warmfs/warmfs-cache", "\n".join(reference_problems(docs)))

    def test_consumer_without_host_to_container(self):
        def edit(job):
            for c in pod_spec(job)["containers"]:
                for vm in c["volumeMounts"]:
                    vm.pop("mountPropagation")
                    vm["readOnly"] = False
        docs = self.broken(self.examples, "Job", edit)
        problems = "\n".join(consumer_problems(docs, {"/mnt/warmfs"}))
        self.assertIn("without HostToContainer", problems)
        self.assertIn("writable", problems)

    def test_cache_server_list_out_of_step(self):
        docs = self.broken(self.servers, "StatefulSet",
                           lambda ss: ss["spec"].update(replicas=3))
        self.assertTrue(any("--cache-server lists" in p
                            for p in cache_server_problems(docs, self.cli)))
        docs = self.broken(self.servers, "Service", lambda s: s["spec"].pop("clusterIP"))
        self.assertTrue(any("not headless" in p for p in cache_server_problems(docs, self.cli)))

    def test_cli_help_parser(self):
        # As warmfs's CLI11 prints it (warmfs mount --help, serve --help).
        text = ("Positionals:\n  source TEXT REQUIRED        s3://BUCKET[/PREFIX]\n\n"
                "Options:\n  -h,--help                   Print this help message and exit\n"
                "  --endpoint TEXT             S3 endpoint URL\n"
                "  --bucket TEXT ... REQUIRED  Buckets served, comma-separated\n"
                "  --upload-threads UINT:UINT in [1 - 64]\n"
                "                              Parts uploaded at once (default 4)\n"
                "  --log-level TEXT:{debug,info,warn,error}\n"
                "  -f,--foreground             Stay attached to the terminal\n")
        self.assertEqual(cli_options_from_help(text), {
            "-h": False, "--help": False, "--endpoint": True, "--bucket": True,
            "--upload-threads": True, "--log-level": True, "-f": False, "--foreground": False})

    def test_dashboard_with_a_renamed_metric(self):
        dashboard = json.loads(DASHBOARD.read_text())
        target = next(p for p in dashboard["panels"] if p.get("targets"))["targets"][0]
        target["expr"] = target["expr"].replace("warmfs_", "warmfs_fs_", 1)
        self.assertTrue(any("unknown metric names" in p for p in dashboard_problems(dashboard)))
        target["expr"] = "sum(rate(warmfs_reads_total{instance=~\"$instance\"}[5m]) by (tier)"
        self.assertTrue(promtool_problems(self, [("broken", target["expr"])]))


if __name__ == "__main__":
    unittest.main()
