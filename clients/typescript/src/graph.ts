/**
 * The knowledge graph of one user (`{scope}/graph`, docs/api.md): entities with observations that
 * hold over time, typed relations, episodes, the profile card, and the `remember` / `relate` agent tools.
 * Entities and relations go in and come out as the API's JSON (`entity_type`, `relation_type`, ...).
 */
import { UserScope, asEntry, timestamp, type EntryLike, type Scoped, type Write } from "./scope.js";
import type {
  Entity,
  EntityHistory,
  EntityIn,
  Episode,
  GraphPage,
  Moment,
  NodeHit,
  Observation,
  Related,
  Relation,
  RelationIn,
  Remembered,
  Subgraph,
  Superseded,
} from "./types.js";

export interface ValidFrom extends Write {
  /** When the observations became true (default: now). */
  validFrom?: Moment | undefined;
}

export interface ValidTo extends Write {
  /** When the fact stopped being true (default: now). */
  validTo?: Moment | undefined;
}

export interface ReadGraphOptions extends Scoped {
  /** The graph as it was true at this moment. */
  asOf?: Moment | undefined;
  /** The graph as it was recorded at this moment. */
  recordedAsOf?: Moment | undefined;
  cursor?: string | undefined;
}

export interface ProfileCardOptions extends Scoped {
  maxEntities?: number | undefined;
  maxObservations?: number | undefined;
}

export interface ListEpisodesOptions extends Scoped {
  sessionId?: string | undefined;
  /** Words to rank the episodes by. */
  query?: string | undefined;
  limit?: number | undefined;
}

export abstract class UserGraph extends UserScope {
  /** Create or update entities (`{ name, entity_type?, observations? }`): the entities as stored. */
  async createEntities(entities: readonly EntityIn[], options: Write = {}): Promise<Entity[]> {
    const body = { entities: [...entities], project_id: options.projectId };
    return (await this.call("createEntities", {}, { body, idempotencyKey: options.idempotencyKey })).entities;
  }

  /** Delete an entity with its observations and relations. */
  async deleteEntity(name: string, options: Write = {}): Promise<void> {
    const query = { project_id: options.projectId };
    await this.call("deleteEntity", { name }, { query, idempotencyKey: options.idempotencyKey });
  }

  /** Add observations to a known entity (NotFound otherwise): the observations as stored. */
  async addObservations(name: string, observations: readonly string[], options: ValidFrom = {}): Promise<Observation[]> {
    const body = { observations: [...observations], valid_from: timestamp(options.validFrom), project_id: options.projectId };
    const reply = await this.call("addObservations", { name }, { body, idempotencyKey: options.idempotencyKey });
    return reply.observations;
  }

  /** The entity with every observation and relation, current and past. */
  history(entity: string, options: Scoped = {}): Promise<EntityHistory> {
    return this.call("history", { name: entity }, { query: { project_id: options.projectId } });
  }

  /** Mark an observation as no longer true (from `validTo`, default now): the observation. */
  invalidateObservation(observationId: string, options: ValidTo = {}): Promise<Observation> {
    const body = { valid_to: timestamp(options.validTo), project_id: options.projectId };
    return this.call("invalidateObservation", { obs_id: observationId }, { body, idempotencyKey: options.idempotencyKey });
  }

  /** Replace an observation by a new one: `{ invalidated, created }`. */
  supersedeObservation(observationId: string, content: string, options: Write = {}): Promise<Superseded> {
    const body = { content, project_id: options.projectId };
    return this.call("supersedeObservation", { obs_id: observationId }, { body, idempotencyKey: options.idempotencyKey });
  }

  async deleteObservation(observationId: string, options: Write = {}): Promise<void> {
    const query = { project_id: options.projectId };
    await this.call("deleteObservation", { obs_id: observationId }, { query, idempotencyKey: options.idempotencyKey });
  }

  /** Create relations (`{ source, relation_type, target }`, entities created if new): the relations as stored. */
  async createRelations(relations: readonly RelationIn[], options: Write = {}): Promise<Relation[]> {
    const body = { relations: [...relations], project_id: options.projectId };
    return (await this.call("createRelations", {}, { body, idempotencyKey: options.idempotencyKey })).relations;
  }

  /** Mark a relation as no longer true (from `validTo`, default now): the relation. */
  invalidateRelation(relationId: string, options: ValidTo = {}): Promise<Relation> {
    const body = { valid_to: timestamp(options.validTo), project_id: options.projectId };
    return this.call("invalidateRelation", { rel_id: relationId }, { body, idempotencyKey: options.idempotencyKey });
  }

  async deleteRelation(relationId: string, options: Write = {}): Promise<void> {
    const query = { project_id: options.projectId };
    await this.call("deleteRelation", { rel_id: relationId }, { query, idempotencyKey: options.idempotencyKey });
  }

  /** The entities best matching `query`, each with its current relations and score, best first. */
  async searchNodes(query: string, options: Scoped & { limit?: number | undefined } = {}): Promise<NodeHit[]> {
    const reply = await this.call("searchNodes", {}, { query: { q: query, limit: options.limit, project_id: options.projectId } });
    return reply.results;
  }

  /** The named entities and the current relations between them. */
  openNodes(names: readonly string[], options: Scoped = {}): Promise<Subgraph> {
    return this.call("openNodes", {}, { query: { name: [...names], project_id: options.projectId } });
  }

  /** One page of the graph, current or as of a valid and/or recorded time (`next_cursor` leads to the rest). */
  readGraph(options: ReadGraphOptions = {}): Promise<GraphPage> {
    const query = {
      as_of: timestamp(options.asOf),
      recorded_as_of: timestamp(options.recordedAsOf),
      cursor: options.cursor,
      project_id: options.projectId,
    };
    return this.call("readGraph", {}, { query });
  }

  /** The compact summary of what is known about the user, for a system prompt ("" when nothing is). */
  async profileCard(options: ProfileCardOptions = {}): Promise<string> {
    const query = {
      max_entities: options.maxEntities,
      max_observations: options.maxObservations,
      project_id: options.projectId,
    };
    return (await this.call("profileCard", {}, { query })).text;
  }

  /** Store a session's turns as episodes, replacing the session's: how many were stored. */
  async addEpisodes(sessionId: string, entries: readonly EntryLike[], options: Write = {}): Promise<number> {
    const body = { session_id: sessionId, entries: entries.map(asEntry), project_id: options.projectId };
    return (await this.call("addEpisodes", {}, { body, idempotencyKey: options.idempotencyKey })).stored;
  }

  /** Episodes, of one session or ranked by `query`. */
  async listEpisodes(options: ListEpisodesOptions = {}): Promise<Episode[]> {
    const query = { session_id: options.sessionId, q: options.query, limit: options.limit, project_id: options.projectId };
    return (await this.call("listEpisodes", {}, { query })).episodes;
  }

  /** The `remember` agent tool: facts about an entity (created if new). */
  remember(entity: string, facts: readonly string[], options: Write & { entityType?: string | undefined } = {}): Promise<Remembered> {
    const body = { entity, facts: [...facts], entity_type: options.entityType, project_id: options.projectId };
    return this.call("remember", {}, { body, idempotencyKey: options.idempotencyKey });
  }

  /** The `relate` agent tool: a typed edge between two entities (created if new). */
  relate(source: string, relation: string, target: string, options: Write = {}): Promise<Related> {
    const body = { source, relation, target, project_id: options.projectId };
    return this.call("relate", {}, { body, idempotencyKey: options.idempotencyKey });
  }
}
