import { eq, sql } from 'drizzle-orm';
import type { Database } from '@cairn/db';
import { recipes } from '../db/schema.js';
import type { Recipes } from '../app/ports.js';
import { SEEDED_RECIPES, type Recipe } from '../domain/recipes.js';

/** The recipe catalog in tenant.recipes, seeded (upserted) at start from domain/recipes.ts. */
export class RecipeCatalog implements Recipes {
  constructor(private readonly db: Database) {}

  async seed(): Promise<void> {
    for (const recipe of SEEDED_RECIPES) {
      await this.db
        .insert(recipes)
        .values({ recipeId: recipe.recipe_id, definition: recipe })
        .onConflictDoUpdate({ target: recipes.recipeId, set: { definition: recipe, updatedAt: sql`now()` } });
    }
  }

  async get(recipeId: string): Promise<Recipe | null> {
    const [row] = await this.db.select().from(recipes).where(eq(recipes.recipeId, recipeId));
    return row?.active ? (row.definition as Recipe) : null;
  }

  async list(): Promise<Recipe[]> {
    const rows = await this.db.select().from(recipes).where(eq(recipes.active, true)).orderBy(recipes.recipeId);
    return rows.map((r) => r.definition as Recipe);
  }
}
