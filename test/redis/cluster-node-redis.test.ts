/**
 * The conformance suite on a real Redis Cluster of three masters, through
 * node-redis's `createCluster` (v6, RESP3) handed to the adapter: scripts
 * routed by their first key, EVALSHA with EVAL where a node lacks a script,
 * and a duplicate cluster for each namespace's watch reader.
 */
import { clusterConformanceOn } from './suites'

clusterConformanceOn('redis')
