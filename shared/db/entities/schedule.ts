import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { BoolColumn, IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** A cron schedule that runs a generation for its owner (spec 2.8, 4.11; decisions.md). */
@Entity('schedules')
@Index('ix_schedules_user', ['userId', 'id'])
@Index('ix_schedules_updated', ['updatedAt'])
export class Schedule {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('name', 200)
  name!: string;

  @StringColumn('cron', 100)
  cron!: string;

  @StringColumn('timezone', 64, { default: 'UTC' })
  timezone!: string;

  @StringColumn('model', 100)
  model!: string;

  @Column({ name: 'prompt', type: 'text' })
  prompt!: string;

  /** JSON object of params. */
  @Column({ name: 'params', type: 'text' })
  params!: string;

  @BoolColumn('is_active', { default: true })
  isActive!: boolean;

  @TimestampColumn('next_run_at', { nullable: true })
  nextRunAt!: Date | null;

  @TimestampColumn('last_run_at', { nullable: true })
  lastRunAt!: Date | null;

  @IntColumn('last_generation_id', { nullable: true })
  lastGenerationId!: number | null;

  @StringColumn('last_error', 500, { nullable: true })
  lastError!: string | null;

  @IntColumn('consecutive_failures', { default: 0 })
  consecutiveFailures!: number;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('updated_at')
  updatedAt!: Date;
}

/** One firing of a schedule, by minute: the unique index makes a firing happen once. */
@Entity('schedule_firings')
@Index('uq_schedule_firings', ['scheduleId', 'fireAt'], { unique: true })
export class ScheduleFiring {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('schedule_id')
  scheduleId!: number;

  @ManyToOne(() => Schedule, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'schedule_id' })
  schedule?: Schedule;

  @TimestampColumn('fire_at')
  fireAt!: Date;

  @TimestampColumn('created_at')
  createdAt!: Date;
}
