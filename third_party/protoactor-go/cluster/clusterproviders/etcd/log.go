package etcd
