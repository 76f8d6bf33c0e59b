/* PLACEHOLDER */ typedef int mfs_placeholder_worker_client;
