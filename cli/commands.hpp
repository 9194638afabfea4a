#pragma once
// Each `troupe <command>`: takes the arguments after the command name, returns the exit code.

namespace troupe::cli {

int make_test_model_command(int argc, char** argv);
int generate_command(int argc, char** argv);
int serve_command(int argc, char** argv);
int bench_command(int argc, char** argv);
int cluster_command(int argc, char** argv);
int cluster_up_command(int argc, char** argv);
int cluster_certs_command(int argc, char** argv);
int cluster_status_command(int argc, char** argv);
int cluster_replica_command(int argc, char** argv);
int node_command(int argc, char** argv);
int chaos_command(int argc, char** argv);
int health_command(int argc, char** argv);

}  // namespace troupe::cli
